// Every message the server pushes without a request is encoded here (Protocol/README.md#notifications): `change`,
// `progress` and `closing`. A change notification is four byte runs, none of them encoded per notification: the
// constant `{"jsonrpc":"2.0","method":"change","params":{"subscription":`, the id's digits (packed in the
// subscription, one store), the middle `,"path":"P",` (plus `"context":C,`) built at subscribe time and shared by the
// subscriptions of one path, and the change's tail `"kind":…,"indexes":…,"new":…,"old":…,"prior":true,"seq":N}}\n`,
// encoded once per change and shape however many subscriptions receive it.
import ObjectGraph
import ValueCoding
import WireProtocol

/// Encodes the tail of a change's notifications once per change and shape (which fields the options include),
/// however many subscriptions receive it. Loop-owned.
@MainActor
final class NotificationEncoder {
    private struct Key: Equatable {
        var payload: UInt64
        var shape: UInt8
    }

    // Unchecked exclusivity below: loop-owned, never re-entered; measured in ARCHITECTURE.md#decisions.
    // A few recent tails, each in a buffer of its own that is rewritten in place: subscriptions of one change with
    // different options alternate between shapes.
    @exclusivity(unchecked) private var keys: [Key] = Array(repeating: Key(payload: 0, shape: 0), count: 4)
    private let tails = OutputBuffers(count: 4)
    @exclusivity(unchecked) private var next = 0
    /// The tail found last, by the change's payload and the options asked with (the shape follows from both) and
    /// its bytes, as plain values read without touching the buffers: the subscriptions of one change ask for the
    /// same one in turn, and finding it needs no shape worked out from the change's fields.
    @exclusivity(unchecked) private var lastPayload: UInt64 = 0
    @exclusivity(unchecked) private var lastOptions: UInt8 = 0
    @exclusivity(unchecked) private var lastTail = UnsafeRawBufferPointer(start: nil, count: 0)
    /// Whether some tail's buffer is large (over 64 KiB): `releaseLargeTails` looks only then.
    @exclusivity(unchecked) private var hasLargeTails = false
    /// Reused for values that are not written in place.
    @exclusivity(unchecked) private var scratch: [UInt8] = []

    /// Recent middles by path, so that subscriptions of one path share one buffer.
    private var middles: [String: SharedBytes] = [:]

    /// `,"path":"P",` and, with a context, `"context":C,`.
    func middle(path: String, context: JSONValue?) -> SharedBytes {
        if context == nil, let shared = self.middles[path] { return shared }
        var middle = Array(#","path":"#.utf8)
        JSONWriter.appendString(path, to: &middle)
        middle.append(UInt8(ascii: ","))
        if let context {
            middle.append(contentsOf: #""context":"#.utf8)
            JSONWriter.append(context, to: &middle)
            middle.append(UInt8(ascii: ","))
            return SharedBytes(middle)
        }
        if self.middles.count >= 4096 { self.middles.removeAll(keepingCapacity: true) }
        let shared = SharedBytes(middle)
        self.middles[path] = shared
        return shared
    }

    /// Appends `subscription`'s notification to `output`, whose `tail` (`tail(for:options:)`) the caller found
    /// first. (Static, and the tail found by a separate call: with the encoder's method taking `inout` output, the
    /// compiler retained and released the encoder around each notification to keep it alive across the access.)
    @inline(__always)
    static func appendChange(tail: UnsafeRawBufferPointer, of subscription: Subscription, to output: inout OutputBuffer) {
        output.appendNotification(
            head: #"{"jsonrpc":"2.0","method":"change","params":{"subscription":"#, idDigits: subscription.idDigits,
            idDigitCount: Int(subscription.idDigitCount), id: subscription.id, middle: subscription.middle.bytes,
            tail: tail)
    }

    /// `{"jsonrpc":"2.0","method":"progress","params":{"subscription":ID,"seq":N}}` and a newline.
    func appendProgress(subscription id: Int, seq: UInt64, to buffer: inout [UInt8]) {
        RPCEncoder.appendNotification(method: "progress", to: &buffer) {
            $0.append(contentsOf: #"{"subscription":"#.utf8)
            JSONWriter.appendInt(Int64(id), to: &$0)
            $0.append(contentsOf: #","seq":"#.utf8)
            JSONWriter.appendInt(Int64(seq), to: &$0)
            $0.append(UInt8(ascii: "}"))
        }
        buffer.append(UInt8(ascii: "\n"))
    }

    /// `{"jsonrpc":"2.0","method":"closing","params":{"reason":R}}` and a newline.
    static func closingNotice(_ reason: CloseReason) -> [UInt8] {
        var buffer: [UInt8] = []
        RPCEncoder.appendNotification(method: "closing", to: &buffer) {
            $0.append(contentsOf: #"{"reason":""#.utf8)
            $0.append(contentsOf: reason.rawValue.utf8)
            $0.append(contentsOf: #""}"#.utf8)
        }
        buffer.append(UInt8(ascii: "\n"))
        return buffer
    }

    /// The tail for `change` as an observation with `options` sees it (`"kind":…` through `}}\n`), encoded on
    /// first use; valid until the next call.
    @inline(__always)
    func tail(for change: Change, options: ObservationOptions) -> UnsafeRawBufferPointer {
        // The usual case, the tail the previous subscription of this change got with the same options, inline (a
        // payload is one change's: its fields, and so the shape for given options, never differ); the rest in a call.
        if change.payloadID != 0 && self.lastPayload == change.payloadID && self.lastOptions == options.rawValue {
            return self.lastTail
        }
        return self.findOrEncodeTail(for: change, options: options)
    }

    @inline(never)
    private func findOrEncodeTail(for change: Change, options: ObservationOptions) -> UnsafeRawBufferPointer {
        // The fields the change carries, less `new`/`old` when the options did not ask for them.
        let shape = change.fieldBits & (0b1100 | options.rawValue & 0b11)
        let key = Key(payload: change.payloadID, shape: shape)
        var slot = change.payloadID != 0 ? self.keys.firstIndex(of: key) : nil
        if slot == nil {
            let next = self.next
            self.releaseLargeTails(keeping: change.payloadID)
            self.keys[next] = key
            self.encodeTail(change, shape: shape, into: self.tails.buffer(next))
            self.next = (next + 1) % self.keys.count
            slot = next
        }
        // (Only the slot just found or rewritten is remembered, so `lastTail` never outlives its buffer's bytes.)
        self.lastPayload = change.payloadID
        self.lastOptions = options.rawValue
        self.lastTail = self.tails.buffer(slot.unsafelyUnwrapped).pointee.bytes
        return self.lastTail
    }

    /// Before a new tail is encoded: the large tails of other changes give their memory back (kvod holds at most one
    /// change's large encodings, in its shapes, however many changes with large values come in a row).
    @inline(__always)
    private func releaseLargeTails(keeping payload: UInt64) {
        guard self.hasLargeTails else { return }
        self.hasLargeTails = false
        for index in 0..<self.keys.count {
            let tail = self.tails.buffer(index)
            guard tail.pointee.capacity > 64 << 10 else { continue }
            if payload != 0 && self.keys[index].payload == payload {
                self.hasLargeTails = true
                continue
            }
            tail.pointee.removeAll(keepingCapacity: false)
            self.keys[index] = Key(payload: 0, shape: 0)
        }
        self.lastPayload = 0
        self.lastTail = UnsafeRawBufferPointer(start: nil, count: 0)
    }

    private func encodeTail(_ change: Change, shape: UInt8, into tail: UnsafeMutablePointer<OutputBuffer>) {
        // A tail once made large by a large value gives its memory back.
        tail.pointee.removeAll(keepingCapacity: tail.pointee.capacity <= 64 << 10)
        switch change.kind {
        case .setting: tail.pointee.append(#""kind":"setting""#)
        case .insertion: tail.pointee.append(#""kind":"insertion""#)
        case .removal: tail.pointee.append(#""kind":"removal""#)
        case .replacement: tail.pointee.append(#""kind":"replacement""#)
        }
        if let indexes = change.indexes {
            tail.pointee.append(#","indexes":["#)
            for (position, index) in indexes.enumerated() {
                if position > 0 { tail.pointee.append(",") }
                tail.pointee.appendInteger(Int64(index))
            }
            tail.pointee.append("]")
        }
        if shape & 1 != 0, let new = change.new {
            tail.pointee.append(#","new":"#)
            self.append(new, to: tail)
        }
        if shape & 2 != 0, let old = change.old {
            tail.pointee.append(#","old":"#)
            self.append(old, to: tail)
        }
        if let count = change.count {
            tail.pointee.append(#","count":"#)
            tail.pointee.appendInteger(Int64(count))
        }
        if change.isPrior { tail.pointee.append(#","prior":true"#) }
        if change.isInitial { tail.pointee.append(#","initial":true"#) }
        tail.pointee.append(#","seq":"#)
        tail.pointee.appendInteger(Int64(change.seq))
        tail.pointee.append("}}\n")
        if tail.pointee.capacity > 64 << 10 { self.hasLargeTails = true }
    }

    /// A value's JSON: scalars written in place, anything else through `Value.appendJSON`.
    private func append(_ value: Value, to tail: UnsafeMutablePointer<OutputBuffer>) {
        switch value {
        case .int(let number): tail.pointee.appendInteger(number)
        case .bool(let flag): tail.pointee.append(flag ? "true" : "false")
        case .null: tail.pointee.append("null")
        default:
            self.scratch.removeAll(keepingCapacity: true)
            value.appendJSON(to: &self.scratch)
            tail.pointee.append(self.scratch)
            // A scratch made large by a large value gives its memory back at once (the tail holds the encoding).
            if self.scratch.capacity > 64 << 10 { self.scratch = [] }
        }
    }
}

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

    // A few recent tails: subscriptions of one change with different options alternate between shapes.
    @exclusivity(unchecked) private var keys: [Key] = Array(repeating: Key(payload: 0, shape: 0), count: 4)
    @exclusivity(unchecked) private var tails: [[UInt8]] = Array(repeating: [], count: 4)
    @exclusivity(unchecked) private var next = 0

    /// Recent middles by path, so that subscriptions of one path share one buffer.
    private var middles: [String: [UInt8]] = [:]

    /// `,"path":"P",` and, with a context, `"context":C,`.
    func middle(path: String, context: JSONValue?) -> [UInt8] {
        if context == nil, let shared = self.middles[path] { return shared }
        var middle = Array(#","path":"#.utf8)
        JSONWriter.appendString(path, to: &middle)
        middle.append(UInt8(ascii: ","))
        if let context {
            middle.append(contentsOf: #""context":"#.utf8)
            JSONWriter.append(context, to: &middle)
            middle.append(UInt8(ascii: ","))
            return middle
        }
        if self.middles.count >= 4096 { self.middles.removeAll(keepingCapacity: true) }
        self.middles[path] = middle
        return middle
    }

    /// Appends `subscription`'s notification of `change` (as an observation with `options` sees it) to `output`.
    @inline(__always)
    func appendChange(
        _ change: Change, options: ObservationOptions, of subscription: Subscription, to output: inout OutputBuffer
    ) {
        let slot = self.tailSlot(for: change, options: options)
        output.append(#"{"jsonrpc":"2.0","method":"change","params":{"subscription":"#)
        if subscription.idDigitCount > 0 {
            output.append(packed: subscription.idDigits, count: Int(subscription.idDigitCount))
        } else {
            output.appendInteger(Int64(subscription.id))
        }
        output.append(subscription.middle)
        // (No closure here: a main-actor closure handed to a nonisolated API gets a runtime isolation check.)
        output.append(self.tails[slot])
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

    /// The slot of the tail for `change` as an observation with `options` sees it (`"kind":…` through `}}\n`),
    /// encoded on first use; valid until the next call.
    func tailSlot(for change: Change, options: ObservationOptions) -> Int {
        // The fields the change carries, less `new`/`old` when the options did not ask for them.
        let shape = change.fieldBits & (0b1100 | options.rawValue & 0b11)
        let key = Key(payload: change.payloadID, shape: shape)
        if change.payloadID != 0, let slot = self.keys.firstIndex(of: key) { return slot }
        let slot = self.next
        self.keys[slot] = key
        self.tails[slot] = Self.encodeTail(change, shape: shape)
        self.next = (slot + 1) % self.keys.count
        return slot
    }

    private static func encodeTail(_ change: Change, shape: UInt8) -> [UInt8] {
        var buffer: [UInt8]
        switch change.kind {
        case .setting: buffer = Self.settingBytes
        case .insertion: buffer = Self.insertionBytes
        case .removal: buffer = Self.removalBytes
        case .replacement: buffer = Self.replacementBytes
        }
        if let indexes = change.indexes {
            buffer.append(contentsOf: Self.indexesBytes)
            for (position, index) in indexes.enumerated() {
                if position > 0 { buffer.append(UInt8(ascii: ",")) }
                JSONWriter.appendInt(Int64(index), to: &buffer)
            }
            buffer.append(UInt8(ascii: "]"))
        }
        if shape & 1 != 0, let new = change.new {
            buffer.append(contentsOf: Self.newBytes)
            new.appendJSON(to: &buffer)
        }
        if shape & 2 != 0, let old = change.old {
            buffer.append(contentsOf: Self.oldBytes)
            old.appendJSON(to: &buffer)
        }
        if change.isPrior { buffer.append(contentsOf: Self.priorBytes) }
        if change.isInitial { buffer.append(contentsOf: Self.initialBytes) }
        buffer.append(contentsOf: Self.seqBytes)
        JSONWriter.appendInt(Int64(change.seq), to: &buffer)
        buffer.append(contentsOf: Self.endBytes)
        return buffer
    }

    private static let settingBytes = Array(#""kind":"setting""#.utf8)
    private static let insertionBytes = Array(#""kind":"insertion""#.utf8)
    private static let removalBytes = Array(#""kind":"removal""#.utf8)
    private static let replacementBytes = Array(#""kind":"replacement""#.utf8)
    private static let indexesBytes = Array(#","indexes":["#.utf8)
    private static let newBytes = Array(#","new":"#.utf8)
    private static let oldBytes = Array(#","old":"#.utf8)
    private static let priorBytes = Array(#","prior":true"#.utf8)
    private static let initialBytes = Array(#","initial":true"#.utf8)
    private static let seqBytes = Array(#","seq":"#.utf8)
    private static let endBytes = Array("}}\n".utf8)
}

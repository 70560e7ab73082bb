// One client subscription and how its notifications are written. A notification is four byte runs, none of them
// encoded per notification: the constant `{"jsonrpc":"2.0","method":"change","params":{"subscription":`, the id's
// digits (packed in the subscription, one store), the middle `,"path":"P",` (plus `"context":C,`) built at subscribe
// time and shared by the subscriptions of one path, and the change's tail `"kind":…,"indexes":…,"new":…,"old":…,
// "prior":true,"seq":N}}\n`, encoded once per change and shape however many subscriptions receive it
// (NotificationEncoder). The shape is Protocol/README.md#notifications.
import ObjectGraph
import ValueCoding
import WireProtocol

/// A subscription of one connection. Loop-owned. It is the engine's sink for its observation: the engine calls
/// `observe` inside the change. Kept small (fields a subscription rarely has live in `Extras`): a server holds
/// hundreds of thousands.
@MainActor
final class Subscription {
    /// The subscription id on the wire (unique in the server, increasing).
    let id: Int
    /// The engine observation behind it: set right after it is added, nil once the subscription ended (the
    /// observer holds the subscription as its sink, so this reference is dropped then to break the cycle).
    var observer: Observer?
    unowned(unsafe) let connection: Connection  // a connection removes its subscriptions before it goes
    let options: ObservationOptions
    /// How many digits `idDigits` holds: the id's, when it has at most 8; 0 for a longer id (formatted per
    /// notification).
    let idDigitCount: UInt8
    /// The id's decimal digits packed little-endian (the first digit in the low byte).
    let idDigits: UInt64
    /// `,"path":"P",` (and `"context":C,`): shared by the subscriptions of one path without context.
    let middle: [UInt8]
    /// What few subscriptions have: a context, `progress` notifications.
    private(set) var extras: Extras?

    final class Extras {
        /// The key path as the client gave it, when that is not how `keyPath` prints (`$042.x`).
        var spelling: String?
        var context: JSONValue?
        /// With the `progress` param: how long the subscription may stay quiet before a `progress` notification.
        var progressMilliseconds: UInt64 = 0
        /// When the subscription last sent something (loop time).
        var lastSentMilliseconds: UInt64 = 0
    }

    init(
        id: Int, path: String, keyPath: KeyPath, options: ObservationOptions, context: JSONValue?,
        connection: Connection
    ) {
        self.id = id
        self.options = options
        self.connection = connection
        if id >= 0 && id < 100_000_000 {
            var digits: [UInt8] = []
            JSONWriter.appendInt(Int64(id), to: &digits)
            self.idDigitCount = UInt8(digits.count)
            self.idDigits = digits.reversed().reduce(0) { $0 << 8 | UInt64($1) }
        } else {
            self.idDigitCount = 0
            self.idDigits = 0
        }
        self.middle = connection.server.notificationEncoder.middle(path: path, context: context)
        let spelledAsParsed = path == keyPath.description
        if context != nil || !spelledAsParsed {
            let extras = Extras()
            extras.context = context
            extras.spelling = spelledAsParsed ? nil : path
            self.extras = extras
        }
    }

    /// True until the subscription ended.
    var isLive: Bool { self.observer != nil }
    /// The parsed path (while live).
    var keyPath: KeyPath { self.observer!.keyPath }
    /// The key path as the client gave it (while live).
    var path: String { self.extras?.spelling ?? self.keyPath.description }
    var context: JSONValue? { self.extras?.context }

    /// Starts `progress` bookkeeping (Server+Subscriptions.swift).
    func startProgress(milliseconds: UInt64, now: UInt64) {
        let extras = self.extras ?? Extras()
        extras.progressMilliseconds = milliseconds
        extras.lastSentMilliseconds = now
        self.extras = extras
    }

    /// Appends this subscription's notification of `change` to its connection's output.
    @inline(__always)
    private func deliver(_ change: Change, options: ObservationOptions) {
        let connection = self.connection
        if let extras = self.extras, extras.progressMilliseconds > 0 {
            extras.lastSentMilliseconds = connection.server.loop.nowMilliseconds
        }
        let encoder = connection.server.notificationEncoder
        connection.enqueueNotification(of: self, tail: encoder.tailSlot(for: change, options: options), from: encoder)
    }

    /// Queues a notification outside a change (initial, replayed): `change` shaped for this subscription.
    func deliver(_ change: Change) {
        self.deliver(change, options: self.options)
    }
}

extension Subscription: @MainActor ObservationSink {
    func observe(_ change: Change, options: ObservationOptions) {
        self.deliver(change, options: options)
    }
}

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

    /// Appends a tail (by its slot from `tailSlot`) to `output`.
    @inline(__always)
    func appendTail(_ slot: Int, to output: inout OutputBuffer) {
        // (No closure here: a main-actor closure handed to a nonisolated API gets a runtime isolation check.)
        output.append(self.tails[slot])
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

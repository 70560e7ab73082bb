// One client subscription and how its notifications are written. A notification is two byte runs: the
// subscription's head — `{"jsonrpc":"2.0","method":"change","params":{"subscription":ID,"path":"P",` plus
// `"context":C,` — built once at subscribe time, and the change's tail — `"kind":…,"indexes":…,"new":…,"old":…,
// "prior":true,"seq":N}}\n` — encoded once per change and shape, however many subscriptions receive it
// (NotificationEncoder). So fan-out costs two appends per subscriber. The shape is Protocol/README.md#notifications.
import ObjectGraph
import ValueCoding
import WireProtocol

/// A subscription of one connection. Loop-owned.
@MainActor
final class Subscription {
    /// The subscription id on the wire (unique in the server, increasing).
    let id: Int
    /// The engine observation behind it (set right after the observation is added).
    var observation: ObservationID = 0
    /// The key path as the client gave it.
    let path: String
    /// The parsed path.
    let keyPath: KeyPath
    let options: ObservationOptions
    let context: JSONValue?
    unowned(unsafe) let connection: Connection  // a connection removes its subscriptions before it goes
    /// With the `progress` param: how long the subscription may stay quiet before a `progress` notification.
    var progressMilliseconds: UInt64 = 0
    /// When the subscription last sent something (loop time).
    var lastSentMilliseconds: UInt64 = 0
    /// The fixed head of every notification of this subscription.
    private let head: [UInt8]
    unowned(unsafe) private let encoder: NotificationEncoder  // owned by the server, which outlives subscriptions

    init(
        id: Int, path: String, keyPath: KeyPath, options: ObservationOptions, context: JSONValue?,
        connection: Connection
    ) {
        self.id = id
        self.path = path
        self.keyPath = keyPath
        self.options = options
        self.context = context
        self.connection = connection
        self.encoder = connection.server.notificationEncoder
        var head = Array(#"{"jsonrpc":"2.0","method":"change","params":{"subscription":"#.utf8)
        JSONWriter.appendInt(Int64(id), to: &head)
        head.append(contentsOf: #","path":"#.utf8)
        JSONWriter.appendString(path, to: &head)
        head.append(UInt8(ascii: ","))
        if let context {
            head.append(contentsOf: #""context":"#.utf8)
            JSONWriter.append(context, to: &head)
            head.append(UInt8(ascii: ","))
        }
        self.head = head
    }

    /// Queues one notification on the connection (written before the loop next polls).
    func deliver(_ change: Change) {
        if self.progressMilliseconds > 0 { self.lastSentMilliseconds = self.connection.server.loop.nowMilliseconds }
        self.connection.enqueue(self.head, self.encoder.tail(for: change))
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

    /// The tail for `change`: `"kind":…` through `}}\n`.
    func tail(for change: Change) -> [UInt8] {
        var shape: UInt8 = 0
        if change.new != nil { shape |= 1 }
        if change.old != nil { shape |= 2 }
        if change.isPrior { shape |= 4 }
        if change.isInitial { shape |= 8 }
        let key = Key(payload: change.payloadID, shape: shape)
        if change.payloadID != 0, let slot = self.keys.firstIndex(of: key) { return self.tails[slot] }
        let tail = Self.encodeTail(change)
        self.keys[self.next] = key
        self.tails[self.next] = tail
        self.next = (self.next + 1) % self.keys.count
        return tail
    }

    private static func encodeTail(_ change: Change) -> [UInt8] {
        var buffer = Self.kindBytes[change.kind] ?? []
        if let indexes = change.indexes {
            buffer.append(contentsOf: Self.indexesBytes)
            for (position, index) in indexes.enumerated() {
                if position > 0 { buffer.append(UInt8(ascii: ",")) }
                JSONWriter.appendInt(Int64(index), to: &buffer)
            }
            buffer.append(UInt8(ascii: "]"))
        }
        if let new = change.new {
            buffer.append(contentsOf: Self.newBytes)
            new.appendJSON(to: &buffer)
        }
        if let old = change.old {
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

    private static let kindBytes: [ChangeKind: [UInt8]] = Dictionary(
        uniqueKeysWithValues: [ChangeKind.setting, .insertion, .removal, .replacement].map {
            ($0, Array(#""kind":"\#($0.rawValue)""#.utf8))
        })
    private static let indexesBytes = Array(#","indexes":["#.utf8)
    private static let newBytes = Array(#","new":"#.utf8)
    private static let oldBytes = Array(#","old":"#.utf8)
    private static let priorBytes = Array(#","prior":true"#.utf8)
    private static let initialBytes = Array(#","initial":true"#.utf8)
    private static let seqBytes = Array(#","seq":"#.utf8)
    private static let endBytes = Array("}}\n".utf8)
}

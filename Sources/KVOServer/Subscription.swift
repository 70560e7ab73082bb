// One client subscription: the engine observation it wraps, and the pre-encoded parts of its notifications, so a
// notification costs one append of fixed bytes, the change's values (encoded once per change, NotificationEncoder)
// and the seq. The shape is Protocol/README.md#notifications.
import ObjectGraph
import ValueCoding
import WireProtocol

/// A subscription of one connection. Loop-owned.
@MainActor
final class Subscription {
    /// The subscription id on the wire (unique in the server, increasing).
    let id: Int
    /// The engine observation behind it.
    let observation: ObservationID
    /// The key path as the client gave it.
    let path: String
    /// The parsed path.
    let keyPath: KeyPath
    let options: ObservationOptions
    let context: JSONValue?
    unowned let connection: Connection
    /// With the `progress` param: how long the subscription may stay quiet before a `progress` notification.
    var progressMilliseconds: UInt64 = 0
    /// When the subscription last sent something (loop time).
    var lastSentMilliseconds: UInt64 = 0
    /// `{"jsonrpc":"2.0","method":"change","params":{"subscription":ID,"path":"P","kind":"`
    private let prefix: [UInt8]
    /// `,"context":C` or nothing.
    private let contextMember: [UInt8]

    init(
        id: Int, observation: ObservationID, path: String, keyPath: KeyPath, options: ObservationOptions, context: JSONValue?,
        connection: Connection
    ) {
        self.id = id
        self.observation = observation
        self.path = path
        self.keyPath = keyPath
        self.options = options
        self.context = context
        self.connection = connection
        var prefix = Array(#"{"jsonrpc":"2.0","method":"change","params":{"subscription":"#.utf8)
        JSONWriter.appendInt(Int64(id), to: &prefix)
        prefix.append(contentsOf: #","path":"#.utf8)
        JSONWriter.appendString(path, to: &prefix)
        prefix.append(contentsOf: #","kind":""#.utf8)
        self.prefix = prefix
        var contextMember: [UInt8] = []
        if let context {
            contextMember.append(contentsOf: #","context":"#.utf8)
            JSONWriter.append(context, to: &contextMember)
        }
        self.contextMember = contextMember
    }

    /// Encodes one notification into the connection's output (it is written before the loop next polls).
    func deliver(_ change: Change) {
        let encoder = self.connection.server.notificationEncoder
        if self.progressMilliseconds > 0 { self.lastSentMilliseconds = self.connection.server.loop.nowMilliseconds }
        let server = self.connection.server
        self.connection.enqueue { buffer in
            server.stats.notifications += 1  // here: only notifications actually queued count
            buffer.append(contentsOf: self.prefix)
            buffer.append(contentsOf: change.kind.rawValue.utf8)
            buffer.append(UInt8(ascii: "\""))
            if let indexes = change.indexes {
                buffer.append(contentsOf: #","indexes":["#.utf8)
                for (position, index) in indexes.enumerated() {
                    if position > 0 { buffer.append(UInt8(ascii: ",")) }
                    JSONWriter.appendInt(Int64(index), to: &buffer)
                }
                buffer.append(UInt8(ascii: "]"))
            }
            if let new = change.new {
                buffer.append(contentsOf: #","new":"#.utf8)
                encoder.appendNew(new, payload: change.payloadID, to: &buffer)
            }
            if let old = change.old {
                buffer.append(contentsOf: #","old":"#.utf8)
                encoder.appendOld(old, payload: change.payloadID, to: &buffer)
            }
            if change.isPrior { buffer.append(contentsOf: #","prior":true"#.utf8) }
            if change.isInitial { buffer.append(contentsOf: #","initial":true"#.utf8) }
            buffer.append(contentsOf: self.contextMember)
            buffer.append(contentsOf: #","seq":"#.utf8)
            JSONWriter.appendInt(Int64(change.seq), to: &buffer)
            buffer.append(contentsOf: "}}\n".utf8)
        }
    }
}

/// Encodes a change's values once, however many subscriptions receive them. Loop-owned.
@MainActor
final class NotificationEncoder {
    private var newPayload: UInt64 = 0
    private var newBytes: [UInt8] = []
    private var oldPayload: UInt64 = 0
    private var oldBytes: [UInt8] = []

    func appendNew(_ value: Value, payload: UInt64, to buffer: inout [UInt8]) {
        if payload != self.newPayload || payload == 0 {
            self.newPayload = payload
            self.newBytes.removeAll(keepingCapacity: true)
            value.appendJSON(to: &self.newBytes)
        }
        buffer.append(contentsOf: self.newBytes)
    }

    func appendOld(_ value: Value, payload: UInt64, to buffer: inout [UInt8]) {
        if payload != self.oldPayload || payload == 0 {
            self.oldPayload = payload
            self.oldBytes.removeAll(keepingCapacity: true)
            value.appendJSON(to: &self.oldBytes)
        }
        buffer.append(contentsOf: self.oldBytes)
    }
}

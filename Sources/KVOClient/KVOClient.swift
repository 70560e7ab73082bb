// A blocking JSON-RPC 2.0 client for kvod on top of LineConnection: numbered requests, responses matched by id, and
// change notifications queued in arrival order while a response is awaited. Method-specific helpers live in
// KVOClient+Methods.swift. Not thread-safe: one owner at a time.

public import TLS
public import WireProtocol

/// A blocking kvod client: one TCP connection, one request in flight at a time.
///
/// Notifications the server sends while `call` waits for its response are kept, in order, and handed out by
/// `nextNotification(timeout:)` before anything newer from the socket.
public final class KVOClient {
    /// A server notification: its method (kvod sends `change`) and its params (an object; `.null` when absent).
    public typealias Notification = (method: String, params: JSONValue)

    /// The underlying connection (for tests that need the socket itself).
    public let connection: LineConnection
    /// How long `call` waits for its response, and the default for `nextNotification`; nil waits forever.
    public var timeout: Duration?
    /// Notifications received but not yet returned by `nextNotification`, oldest first.
    public private(set) var pendingNotifications: [Notification] = []
    /// The id the next `call` will use.
    public private(set) var nextID: Int64 = 1

    /// Connects to kvod at `host:port` (over TLS with `tls`, a client context); `timeout` bounds the connect (and
    /// handshake) and each later wait for a response.
    public init(
        host: String = "127.0.0.1", port: Int = 7070, timeout: Duration? = .seconds(5), tls: TLSContext? = nil
    ) throws(KVOClientError) {
        self.connection = try LineConnection(host: host, port: port, timeout: timeout, tls: tls)
        self.timeout = timeout
    }

    /// Closes the connection; the server then drops this connection's subscriptions.
    public func close() {
        self.connection.close()
    }

    // MARK: - Requests

    /// Sends request `method` with `params` under the next id and returns its `result`, queuing any notifications that
    /// arrive first. Throws `.server` for an error response (also one with `id: null`, which means the server could
    /// not read the request), `.timeout` when no response comes within `timeout`, `.protocolViolation` for a
    /// response to some other id or anything that is not JSON-RPC.
    public func call(_ method: String, _ params: JSONValue? = nil) throws(KVOClientError) -> JSONValue {
        let id = JSONValue.int(self.nextID)
        self.nextID += 1
        var bytes: [UInt8] = []
        RPCEncoder.appendRequest(id: id, method: method, params: params, to: &bytes)
        bytes.append(UInt8(ascii: "\n"))
        try self.connection.send(bytes)

        let deadline = makeDeadline(after: self.timeout)
        while true {
            let line: [UInt8]
            do {
                line = try self.connection.readLine(until: deadline)
            } catch .timeout {
                throw .timeout("waiting for the response to \(method) (id \(id))")
            }
            switch try Self.decode(line) {
            case .notification(let name, let notificationParams):
                self.pendingNotifications.append((name, notificationParams ?? .null))
            case .response(id, let result):
                return result
            case .error(let errorID, let error) where errorID == id || errorID == .null:
                throw .server(error)
            case .response(let otherID, _), .error(let otherID, _):
                throw .protocolViolation("expected the response to id \(id), got one for id \(otherID)")
            case .batch:
                throw .protocolViolation("expected the response to id \(id), got a batch response")
            }
        }
    }

    /// Sends a JSON-RPC notification (a request without an id); the server answers nothing.
    public func notify(_ method: String, _ params: JSONValue? = nil) throws(KVOClientError) {
        var bytes: [UInt8] = []
        RPCEncoder.appendRequest(id: nil, method: method, params: params, to: &bytes)
        bytes.append(UInt8(ascii: "\n"))
        try self.connection.send(bytes)
    }

    // MARK: - Notifications

    /// The oldest notification not yet returned: from the queue first, else the next one from the socket, waiting at
    /// most `timeout` (default: the client's `timeout`; `.some(nil)` waits forever). A response arriving instead is a
    /// protocol violation (no request is in flight).
    public func nextNotification(timeout: Duration?? = nil) throws(KVOClientError) -> Notification {
        if !self.pendingNotifications.isEmpty { return self.pendingNotifications.removeFirst() }
        let deadline = makeDeadline(after: timeout ?? self.timeout)
        while true {
            let line: [UInt8]
            do {
                line = try self.connection.readLine(until: deadline)
            } catch .timeout {
                throw .timeout("waiting for a notification")
            }
            switch try Self.decode(line) {
            case .notification(let name, let params):
                return (name, params ?? .null)
            case .response(let id, _), .error(let id, _):
                throw .protocolViolation("expected a notification, got a response for id \(id)")
            case .batch:
                throw .protocolViolation("expected a notification, got a batch response")
            }
        }
    }

    /// Removes and returns every queued notification plus those that can be read from the socket without waiting.
    public func drainNotifications() throws(KVOClientError) -> [Notification] {
        while let line = try self.connection.readLineIfAvailable() {
            switch try Self.decode(line) {
            case .notification(let name, let params):
                self.pendingNotifications.append((name, params ?? .null))
            case .response(let id, _), .error(let id, _):
                throw .protocolViolation("expected a notification, got a response for id \(id)")
            case .batch:
                throw .protocolViolation("expected a notification, got a batch response")
            }
        }
        defer { self.pendingNotifications.removeAll() }
        return self.pendingNotifications
    }

    // MARK: - Raw lines

    /// Sends `line` plus `\n` exactly as given (for tests of malformed input). Responses to raw lines must be read
    /// with `readRawLine`; `call` would reject them as answers to someone else's id.
    public func sendRaw(_ line: String) throws(KVOClientError) {
        try self.connection.sendLine(line)
    }

    /// The next line from the socket as text, without its `\n`, bypassing the notification queue (notifications
    /// already queued by `call` stay queued). Waits at most `timeout` (default: the client's `timeout`).
    public func readRawLine(timeout: Duration?? = nil) throws(KVOClientError) -> String {
        let line = try self.connection.readLine(timeout: timeout ?? self.timeout)
        return String(decoding: line, as: UTF8.self)
    }

    /// Decodes a server line, turning codec errors into protocol violations.
    private static func decode(_ line: [UInt8]) throws(KVOClientError) -> RPCServerMessage {
        do {
            return try RPCServerMessage.decode(line)
        } catch {
            throw .protocolViolation("\(error): \(String(decoding: line.prefix(200), as: UTF8.self))")
        }
    }
}

// The session core without sockets (Sources/KVOServer/Session/): a SessionCore on a ManualClock, sessions on
// RecordingTransports, a recording mutation log. Tests send messages, run the loop turn's flush by hand and read
// exactly what each transport was given, in order.
@testable import KVOServer
import Logging
import ObjectGraph
import WireProtocol

/// A transport that keeps what it is given.
@MainActor
final class RecordingTransport: Transport {
    weak var events: (any TransportEvents)?
    var remoteAddress = "test:1"
    var kind: String { "test" }
    /// Everything written, in order.
    private(set) var written: [UInt8] = []
    /// How much of `written` `takeMessages` already returned.
    private var taken = 0
    /// What the peer has not read yet (tests set it to play a slow consumer).
    var pendingWriteBytes = 0
    private(set) var isReadingPaused = false
    private(set) var closedWith: TransportClose?

    func write(_ messages: UnsafeRawBufferPointer) {
        self.written.append(contentsOf: messages)
    }

    func pauseReading() {
        self.isReadingPaused = true
    }

    func close(_ close: TransportClose) {
        self.closedWith = close
        if case .abandon(let notice, _) = close, self.pendingWriteBytes == 0 { self.written.append(contentsOf: notice) }
    }

    /// The connection is gone (a real transport reports this once its socket closed).
    func finishClosing() {
        self.events?.transportClosed()
    }

    /// Sends one message from the peer.
    func send(_ text: String) {
        let bytes = Array(text.utf8)
        self.events?.transportRead(byteCount: bytes.count)
        bytes.withUnsafeBytes { self.events?.transportReceived($0) }
    }

    /// The messages written since the last call, parsed (every message is one line).
    func takeMessages() throws -> [JSONValue] {
        let fresh = self.written[self.taken...]
        self.taken = self.written.count
        return try fresh.split(separator: UInt8(ascii: "\n")).map { try JSONParser.parse(Array($0)) }
    }
}

/// Keeps every committed mutation, and everything reported (registrations included), in order.
@MainActor
final class RecordingMutationLog: MutationLog {
    /// What the log was told, in order.
    enum Event: Equatable {
        case committed(seq: UInt64, method: String)
        case registered(connection: String, ops: [JSONValue])
        case disconnected(connection: String)
    }

    private(set) var records: [(seq: UInt64, method: String, params: JSONValue?)] = []
    private(set) var events: [Event] = []
    private(set) var outputTurns = 0

    func committed(seq: UInt64, method: String, params: JSONValue?) {
        self.records.append((seq, method, params))
        self.events.append(.committed(seq: seq, method: method))
    }

    func registered(connection: String, ops: [JSONValue]) {
        self.events.append(.registered(connection: connection, ops: ops))
    }

    func disconnected(connection: String) {
        self.events.append(.disconnected(connection: connection))
    }

    func beforeOutput() {
        self.outputTurns += 1
    }
}

/// A session core on a manual clock.
@MainActor
final class InProcessServer {
    let clock = ManualClock()
    let graph: Graph
    let core: SessionCore
    let log = RecordingMutationLog()
    var context: SessionContext { self.core.context }

    /// A core on `graph` (default: a new one of `model`).
    init(
        model: Model = .open, graph: Graph? = nil, limits: Limits = Limits(), accessControl: AccessControl = AccessControl(),
        historyCapacity: Int = 1000
    ) {
        self.graph = graph ?? Graph(model: model)
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        let context = SessionContext(
            graph: self.graph, limits: limits, accessControl: accessControl, historyCapacity: historyCapacity,
            clock: self.clock, logger: logger)
        context.mutationLog = self.log
        self.core = SessionCore(context: context)
    }

    /// A new session on a recording transport.
    func connect() -> (Session, RecordingTransport) {
        let transport = RecordingTransport()
        return (self.core.open(transport), transport)
    }

    /// The end of a loop turn: the journal, then every session's output.
    func flush() {
        self.core.flush()
    }

    /// Sends `{"jsonrpc":"2.0","id":ID,"method":M,"params":P}`, ends the turn and returns what the transport got.
    func request(_ transport: RecordingTransport, _ id: Int, _ method: String, _ params: String? = nil) throws
        -> [JSONValue]
    {
        transport.send(Self.requestText(id, method, params))
        self.flush()
        return try transport.takeMessages()
    }

    static func requestText(_ id: Int, _ method: String, _ params: String? = nil) -> String {
        #"{"jsonrpc":"2.0","id":\#(id),"method":"\#(method)""# + (params.map { #","params":\#($0)"# } ?? "") + "}"
    }
}

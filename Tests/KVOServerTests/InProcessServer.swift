// The session core without sockets (Sources/KVOServer/Session/): a SessionCore on a ManualClock, sessions on
// RecordingTransports, a recording mutation log. Tests send messages, run the loop turn's flush by hand and read
// exactly what each transport was given, in order. `InProcessPeer` speaks Peer's vocabulary (request, send,
// receive, expectQuiet), so a dispatcher test reads the same in process as against a live kvod.
import Foundation
@testable import KVOServer
import Logging
import ModelFile
import ObjectGraph
import Testing
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

    /// Called after each write (tests that follow the order of writes across connections).
    var onWrite: (() -> Void)?

    func write(_ messages: UnsafeRawBufferPointer) {
        self.written.append(contentsOf: messages)
        self.onWrite?()
    }

    func pauseReading() {
        self.isReadingPaused = true
    }

    func resumeReading() {
        self.isReadingPaused = false
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
        self.send(bytes: Array(text.utf8))
    }

    /// Sends one message from the peer, byte for byte (invalid UTF-8 included).
    func send(bytes: [UInt8]) {
        self.events?.transportRead(byteCount: bytes.count)
        bytes.withUnsafeBytes { self.events?.transportReceived($0) }
    }

    /// Sends several messages from the peer as one read (pipelined requests arriving together).
    func sendRead(_ messages: [String]) {
        self.events?.transportRead(byteCount: messages.reduce(0) { $0 + $1.utf8.count })
        for message in messages { Array(message.utf8).withUnsafeBytes { self.events?.transportReceived($0) } }
    }

    /// The peer ends the connection in an orderly way (EOF).
    func end() {
        self.events?.transportEnded(error: false)
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
    /// What was wired into the core and must live as long as it (a cluster node: kvod's Server holds it).
    var wired: [AnyObject] = []

    /// A core on `graph` (default: a new one of `model`). The history's default capacity is kvod's (`--history`).
    init(
        model: Model = .open, graph: Graph? = nil, limits: Limits = Limits(), accessControl: AccessControl = AccessControl(),
        historyCapacity: Int = 10_000
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

    /// A new session seen as a stream of messages, like a `Peer` of a live kvod.
    func peer() -> InProcessPeer {
        let (session, transport) = self.connect()
        return InProcessPeer(server: self, session: session, transport: transport)
    }

    /// The end of a loop turn: the journal, then every session's output.
    func flush() {
        self.core.flush()
    }

    /// The next loop turn of the sessions that yielded (as kvod's idle hook runs it), then its flush; returns
    /// whether some session yielded again.
    @discardableResult
    func nextTurn() -> Bool {
        let yieldedAgain = self.context.sessions.resumeYielded()
        self.core.flush()
        return yieldedAgain
    }

    /// Lets `milliseconds` pass as the server's 250 ms timer would: a tick (then a flush) every 250 ms of it.
    func advance(milliseconds: UInt64) {
        var left = milliseconds
        while left > 0 {
            let step = min(left, 250)
            self.clock.advance(milliseconds: step)
            left -= step
            self.core.tick()
            self.flush()
        }
    }

    /// kvod's embedded default model (Sources/kvod/default-model.json), loaded as kvod loads it without `--model`.
    static func defaultModel() throws -> Model {
        let file = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../../Sources/kvod/default-model.json").standardizedFileURL
        return try Self.model(Array(try Data(contentsOf: file)), fileName: "default-model.json")
    }

    /// The model of a model file's text (docs/MODEL.md), as `kvod --model FILE` loads it.
    static func model(_ text: String, fileName: String = "model.json") throws -> Model {
        try Self.model(Array(text.utf8), fileName: fileName)
    }

    private static func model(_ bytes: [UInt8], fileName: String) throws -> Model {
        try ModelFile.load(bytes, fileName: fileName)
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
        Peer.requestText(id, method, params)
    }
}

/// One session of an `InProcessServer`, seen as a stream of messages: Peer's vocabulary without a socket. Each `send`
/// is one message and one loop turn (the core's flush); `receive` returns what the session was given, in order, and
/// throws when nothing is queued (in process nothing arrives later by itself: advance the server's clock for that).
@MainActor
final class InProcessPeer {
    let server: InProcessServer
    let session: Session
    let transport: RecordingTransport
    /// Messages the transport was given that no `receive` returned yet.
    private var queued: [JSONValue] = []

    init(server: InProcessServer, session: Session, transport: RecordingTransport) {
        self.server = server
        self.session = session
        self.transport = transport
    }

    /// Nothing was queued for the session when a message was expected.
    struct NothingReceived: Error, CustomStringConvertible {
        var description: String { "no message queued for this session" }
    }

    /// Sends one message verbatim, then ends the loop turn.
    func send(_ text: String) {
        self.transport.send(text)
        self.server.flush()
    }

    /// Sends one message byte for byte (invalid UTF-8 included), then ends the loop turn.
    func send(bytes: [UInt8]) {
        self.transport.send(bytes: bytes)
        self.server.flush()
    }

    /// The next message.
    func receive() throws -> JSONValue {
        self.queued += try self.transport.takeMessages()
        guard !self.queued.isEmpty else { throw NothingReceived() }
        return self.queued.removeFirst()
    }

    /// The next `count` messages.
    func receive(_ count: Int) throws -> [JSONValue] {
        try (0..<count).map { _ in try self.receive() }
    }

    /// Sends a request and returns the next message (which must be its response when nothing else is pending).
    func request(_ id: Int, _ method: String, _ params: String? = nil) throws -> JSONValue {
        self.send(InProcessServer.requestText(id, method, params))
        return try self.receive()
    }

    /// Proves nothing else is queued for this session: a ping's response must be the very next message.
    func expectQuiet(sourceLocation: SourceLocation = #_sourceLocation) throws {
        self.send(InProcessServer.requestText(999_999, "ping"))
        let next = try self.receive()
        #expect(next["id"] == .int(999_999), "unexpected message: \(next)", sourceLocation: sourceLocation)
    }

    /// The client goes away: the session ends and its transport reports the connection closed.
    func close() {
        self.session.transportEnded(error: false)
        self.transport.finishClosing()
    }
}

/// An in-process cluster member, wired as `Server.joinCluster` wires kvod's (ClusterNode, no data directory), on an
/// in-memory etcd nobody ticks: a leader of `term` whose lease is proven (or a follower of another address), its sync
/// set "written" at once (the writes recorded in `syncWrites`).
@MainActor
struct InProcessLeader {
    let server = InProcessServer()
    let node: ClusterNode
    var status: ClusterStatus { self.node.status }
    var source: ReplicationSource { self.node.source }
    var log: ClusterLog { self.node.log }
    /// The sync sets written, and whether the next writes succeed.
    let syncWrites = SyncWrites()

    @MainActor
    final class SyncWrites {
        var records: [SyncRecord] = []
        var succeeds = true
    }

    init(term: UInt64, syncReplicas: Int = 0, role: ClusterRole = .leader) {
        var configuration = ClusterConfiguration(endpoints: [], name: "test", advertise: "127.0.0.1:1")
        configuration.syncReplicas = syncReplicas
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        let etcd = InMemoryEtcd(scheduler: Scheduler(seed: 0))
        self.node = ClusterNode(
            configuration: configuration, core: self.server.core, coordinator: InMemoryCoordinator(etcd: etcd),
            logger: logger, durability: nil, recovered: [], baseSeq: 0)
        self.server.wired.append(self.node)
        self.node.status.update(role: role, term: term, leader: role == .leader ? configuration.advertise : "127.0.0.1:2")
        guard role == .leader else { return }
        self.node.status.writableUntil = .max
        self.node.source.becameLeader()
        let written = self.syncWrites
        self.node.source.writeSyncSet = { record, done in
            written.records.append(record)
            done(written.succeeds)
        }
    }
}

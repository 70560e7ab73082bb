// The follower's side of replication: a TCP connection to the leader's advertised kvod port, `hello` (with the
// cluster token when access control is on) and `replicate {fromSeq, term, lastTerm}`, then the lines the leader
// streams (ReplicationSource.swift), each handed to the member, which acknowledges what it journaled (`ack`). The
// link ends on any error, on EOF, or when the member closes it (no heartbeat for a while, a new leader); the member
// opens a new one. Over TLS when the member has a client context for its peers (ClientStream.swift).
import TLS
import UVLoop
import WireProtocol

/// One replication connection. Loop-owned.
@MainActor
final class ReplicationLink {
    /// The leader's advertised address and term this link was opened for.
    let address: String
    let term: UInt64
    /// Loop time of the last line received (or of the start).
    private(set) var lastHeardAt: UInt64
    /// Called with each line from the leader, in order: responses (`id` "hello", "replicate"), records, heartbeats,
    /// a snapshot. A thrown error ends the link.
    var onLine: ((JSONObject) throws -> Void)?
    /// Called once when the link ends (not after `close()`), with why.
    var onEnd: ((String) -> Void)?
    private let loop: EventLoop
    private var stream: (any ClientStream)?
    private var framer = LineFramer(maxLineBytes: 1 << 30)
    private var isClosed = false
    /// This member's advertised address, sent with the first ack only.
    private var member: String?

    /// What a follower asks its leader for.
    struct Request {
        /// The leader's advertised address (`host:port`) and term.
        var address: String
        var term: UInt64
        /// The follower's applied seq, and the term of its record there (the leader checks it: TermHistory).
        var fromSeq: UInt64
        var lastTerm: UInt64
        /// The cluster token (when access control is on).
        var token: String?
        /// The follower's advertised address, sent in its first `ack` (the leader's sync set names members by it).
        var member: String
    }

    /// Connects to the leader and asks for the records after `request.fromSeq`; over TLS with `tls` (the member's
    /// own certificate; the leader's is checked against the CA and its advertised host).
    init(loop: EventLoop, request: Request, tls: TLSContext? = nil) {
        let (address, term, fromSeq, lastTerm, token) =
            (request.address, request.term, request.fromSeq, request.lastTerm, request.token)
        self.loop = loop
        self.address = address
        self.term = term
        self.member = request.member
        self.lastHeardAt = loop.nowMilliseconds
        guard let colon = address.lastIndex(of: ":"), let port = Int(address[address.index(after: colon)...]) else {
            self.endSoon("malformed leader address '\(address)'")
            return
        }
        var host = String(address[..<colon])
        if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        var request: [UInt8] = []
        if let token { ReplicationMessage.hello(token: token).encode(to: &request) }
        ReplicationMessage.replicate(fromSeq: fromSeq, term: term, lastTerm: lastTerm).encode(to: &request)
        do {
            try openClientStream(loop: loop, host: host, port: port, tls: tls) { [weak self] stream, error in
                guard let stream else {
                    self?.end("connect to \(address): \(error ?? "?")")
                    return
                }
                guard let self, !self.isClosed else {
                    stream.close()
                    return
                }
                self.started(stream, sending: request)
            }
        } catch {
            self.endSoon("connect to \(address): \(error)")
        }
    }

    /// Tells the leader that every record up to `seq` is in this member's journal, and every registration change
    /// up to number `registration` (when the leader numbered one on this link): the JSON-RPC notification
    /// `{"jsonrpc":"2.0","method":"ack","params":{"seq":N,"registration":R}}` (for `--sync-replicas`; also a sign
    /// of life).
    func acknowledge(_ seq: UInt64, registration: UInt64?) {
        guard let stream = self.stream, !self.isClosed else { return }
        var line: [UInt8] = []
        // The member's address once per link: a leader of an earlier version ignores it.
        ReplicationMessage.ack(seq: seq, registration: registration, member: self.member).encode(to: &line)
        self.member = nil
        stream.write(line)
    }

    /// Asks the leader to record `paths` cluster-wide (Cluster/RecordedPaths.swift): one JSON-RPC notification
    /// `{"jsonrpc":"2.0","method":"record","params":{"path":P}}` per path. Dropped before the link is connected
    /// (the member sends its paths again once the leader answered `replicate`).
    func requestRecording(_ paths: [String]) {
        guard let stream = self.stream, !self.isClosed, !paths.isEmpty else { return }
        var lines: [UInt8] = []
        for path in paths { ReplicationMessage.recordRequest(path: path).encode(to: &lines) }
        stream.write(lines)
    }

    /// Closes the link; `onEnd` is not called.
    func close() {
        self.isClosed = true
        self.stream?.close()
        self.stream = nil
        self.onLine = nil
        self.onEnd = nil
    }

    private func started(_ stream: any ClientStream, sending request: [UInt8]) {
        self.stream = stream
        stream.setNoDelay(true)
        stream.onRead = { [weak self] chunk in self?.received(chunk) }
        stream.whenEnded { [weak self] error in
            self?.end(error.map { "link: \($0)" } ?? "the leader closed the link")
        }
        stream.write(request)
        do {
            try stream.startReading()
        } catch {
            self.end("link: \(error)")
        }
    }

    private func received(_ chunk: UnsafeRawBufferPointer) {
        self.lastHeardAt = self.loop.nowMilliseconds
        var lines: [JSONValue] = []
        do {
            try self.framer.feed(chunk) { line throws(WireError) in
                guard !line.isEmpty else { return }
                lines.append(try JSONParser.parse(line, maxDepth: 512))
            }
        } catch {
            self.end("unreadable line from the leader: \(error)")
            return
        }
        for line in lines {
            guard !self.isClosed else { return }
            guard case .object(let object) = line else {
                self.end("a line from the leader that is not an object")
                return
            }
            do {
                try self.onLine?(object)
            } catch {
                self.end("\(error)")
                return
            }
        }
    }

    private func end(_ why: String) {
        guard !self.isClosed else { return }
        let onEnd = self.onEnd
        self.close()
        onEnd?(why)
    }

    /// Ends the link from the loop (never from inside init, before the owner has set `onEnd`).
    private func endSoon(_ why: String) {
        guard let timer = try? LoopTimer(loop: self.loop) else { return }
        try? timer.start(afterMilliseconds: 0) { [weak self] in
            timer.close()
            self?.end(why)
        }
    }
}

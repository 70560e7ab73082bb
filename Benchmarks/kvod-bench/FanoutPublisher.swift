// The publishing side of a fan-out run (FanoutSubscriber.swift is the other): a publisher that keeps up to D
// mutations in flight, each carrying its send time (kvod: the value set; Redis PUBLISH: the payload
// `TIME:PUBLISHER:COUNTER`; Redis SET: the value, though keyspace notifications do not carry it).

import PeerProtocols
import UVLoop
import WireProtocol

/// Loop-owned. One publisher connection of a fan-out run, keeping up to `pipeline` mutations in flight.
@MainActor
final class FanoutPublisher {
    /// The position among the publishers (0-based); part of each PUBLISH payload.
    let index: Int
    private unowned let run: FanoutRun
    private var connection: BenchConnection?
    private var framer = LineFramer(maxLineBytes: 1 << 20)
    private var reader = RESPReader()
    /// Mutations sent and not yet acknowledged.
    private(set) var inFlight = 0
    private var nextID: Int64 = 1
    private var counter: Int64 = 0
    private let pathMember: [UInt8]
    /// The fixed head of every Redis command: `*3`, the command, the channel or key.
    private var redisPrefix: [UInt8] = []
    private var scratch: [UInt8] = []
    /// NATS: the reader of `+OK`s, the subject and a space, and the `+OK` that answers CONNECT (not a PUB's).
    private var natsReader = NATSReader()
    private var natsSubject: [UInt8] = []
    private var awaitsConnectOK = true
    /// etcd: the reader of the pipelined put responses, the key and the Host header.
    private var httpReader = HTTPResponseReader()
    private var etcdStatus = 0
    private let etcdHost: String

    /// A publisher of `run`; `attach` gives it its socket.
    init(index: Int, run: FanoutRun) {
        self.index = index
        self.run = run
        self.pathMember = KVODRequest.pathMember(run.configuration.key)
        self.etcdHost = "\(run.configuration.host):\(run.configuration.port)"
        switch run.configuration.target {
        case .kvod, .etcd: break
        case .nats:
            self.natsSubject = Array(run.configuration.key.utf8) + [UInt8(ascii: " ")]
        case .redis(let command):
            RESPCommand.appendHeader(UInt8(ascii: "*"), 3, to: &self.redisPrefix)
            RESPCommand.appendBulk(Array((command == .publish ? "PUBLISH" : "SET").utf8), to: &self.redisPrefix)
            RESPCommand.appendBulk(Array(run.configuration.key.utf8), to: &self.redisPrefix)
        }
    }

    /// Starts reading `stream`.
    func attach(_ stream: TCPStream, batcher: OutputBatcher) throws(UVError) {
        let target = self.run.configuration.target
        self.connection = try BenchConnection(
            stream: stream, batcher: batcher, transport: self.run.configuration.transport,
            tls: self.run.configuration.tls,
            onBytes: { [unowned self] chunk in
                switch target {
                case .kvod: self.readKVOD(chunk)
                case .redis: self.readRedis(chunk)
                case .nats: self.readNATS(chunk)
                case .etcd: self.readEtcd(chunk)
                }
            },
            onEnd: { [unowned self] reason in self.run.connectionEnded("publisher \(self.index)", reason) })
        if target == .nats {
            // Verbose: the server acknowledges every PUB with +OK (and the CONNECT itself with one first).
            self.connection?.send { NATSCommand.appendConnect(verbose: true, to: &$0) }
        }
    }

    /// Closes the socket.
    func close() {
        self.connection?.close()
    }

    /// Sends mutations until `pipeline` are in flight, the run's rate allows no more for now, or the run says stop.
    func fill() {
        guard let connection = self.connection else { return }
        while self.inFlight < self.run.configuration.pipeline && self.run.mayPublish && self.run.takePermit() {
            let now = Clock.nanoseconds()
            _ = self.run.willSend(at: now)
            self.inFlight += 1
            switch self.run.configuration.target {
            case .kvod:
                let id = self.nextID
                self.nextID += 1
                connection.send {
                    KVODRequest.appendSet(id: id, pathMember: self.pathMember, value: Int64(now), to: &$0)
                }
            case .redis(let command):
                self.scratch.removeAll(keepingCapacity: true)
                RESPCommand.appendDecimal(now, to: &self.scratch)
                if command == .publish {
                    self.scratch.append(UInt8(ascii: ":"))
                    RESPCommand.appendDecimal(UInt64(self.index), to: &self.scratch)
                    self.scratch.append(UInt8(ascii: ":"))
                    RESPCommand.appendDecimal(UInt64(self.counter), to: &self.scratch)
                    self.counter += 1
                }
                connection.send {
                    $0.append(contentsOf: self.redisPrefix)
                    RESPCommand.appendBulk(self.scratch, to: &$0)
                }
            case .nats, .etcd:
                self.scratch.removeAll(keepingCapacity: true)
                PeerPayload(sentAt: now, publisher: self.index, counter: self.counter).append(to: &self.scratch)
                self.counter += 1
                if self.run.configuration.target == .nats {
                    connection.send {
                        NATSCommand.appendPublish(subjectAndSpace: self.natsSubject, payload: self.scratch, to: &$0)
                    }
                } else {
                    let key = Array(self.run.configuration.key.utf8)
                    connection.send {
                        EtcdGateway.appendPut(key: key, value: self.scratch, host: self.etcdHost, to: &$0)
                    }
                }
            }
        }
    }

    private func acknowledge() {
        guard self.inFlight > 0 else { return self.run.report("publisher \(self.index): an unexpected response") }
        self.inFlight -= 1
        self.run.didAcknowledge()
    }

    private func readKVOD(_ chunk: UnsafeRawBufferPointer) {
        do throws(WireError) {
            try self.framer.feed(chunk) { line in
                switch KVODLine.scan(line) {
                case .result: self.acknowledge()
                case .error(let text): self.run.fail("publisher \(self.index): error response \(text)")
                case .change, .other: self.run.fail("publisher \(self.index): unexpected line")
                }
            }
        } catch {
            self.run.fail("publisher \(self.index): \(error)")
        }
        self.fill()
    }

    private func readRedis(_ chunk: UnsafeRawBufferPointer) {
        let expectedReceivers = Int64(self.run.configuration.subscribers)
        let failure = self.reader.feed(chunk) { items, bytes in
            guard let reply = items.first else { return }
            switch reply.kind {
            case .integer:
                if reply.integer != expectedReceivers {
                    self.run.report(
                        "publisher \(self.index): PUBLISH reached \(reply.integer) subscribers, "
                            + "expected \(expectedReceivers)")
                }
                self.acknowledge()
            case .simple:
                self.acknowledge()
            default:
                self.run.fail("publisher \(self.index): reply \(RESPReader.text(reply, in: bytes))")
            }
        }
        if let failure { self.run.fail("publisher \(self.index): \(failure)") }
        self.fill()
    }

    private func readNATS(_ chunk: UnsafeRawBufferPointer) {
        let failure = self.natsReader.feed(chunk) { event, _ in
            switch event {
            case .ok:
                if self.awaitsConnectOK {
                    self.awaitsConnectOK = false
                } else {
                    self.acknowledge()
                }
            case .info, .pong: break
            case .ping: self.connection?.send { NATSCommand.appendPong(to: &$0) }
            case .message: self.run.fail("publisher \(self.index): a message (it subscribes to nothing)")
            case .error(let text): self.run.fail("publisher \(self.index): -ERR \(text)")
            }
        }
        if let failure { self.run.fail("publisher \(self.index): \(failure)") }
        self.fill()
    }

    private func readEtcd(_ chunk: UnsafeRawBufferPointer) {
        let failure = self.httpReader.feed(chunk) { event in
            switch event {
            case .head(let status): self.etcdStatus = status
            case .body: break
            case .end:
                if self.etcdStatus != 200 {
                    self.run.fail("publisher \(self.index): put answered HTTP \(self.etcdStatus)")
                }
                self.acknowledge()
            }
        }
        if let failure { self.run.fail("publisher \(self.index): \(failure)") }
        self.fill()
    }
}

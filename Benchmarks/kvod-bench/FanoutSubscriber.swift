// The receiving side of a fan-out run: a subscriber subscribes once, then checks each notification (kvod: its seq
// is the previous one plus one; Redis PUBLISH, in FanoutSubscriber+Redis.swift: each publisher's counter goes up by
// one) and measures its latency.
// The hot path scans a whole chunk with locals and a byte-pattern match of the expected message, so the load
// generator costs far less per notification than the servers it measures; anything unexpected takes the slow path
// (full parse) and is checked the same way.

import PeerProtocols
import UVLoop
import WireProtocol

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Loop-owned. One subscriber connection of a fan-out run.
@MainActor
final class FanoutSubscriber {
    /// The position among the subscribers (0-based), for messages.
    let index: Int
    unowned let run: FanoutRun
    /// The protocol spoken: kvod or Redis.
    let target: Target
    var connection: BenchConnection?
    /// Bytes of an incomplete message held from the previous chunk.
    private var pending: [UInt8] = []
    /// Whether the subscribe was acknowledged; notifications before that are discrepancies.
    var isSubscribed = false
    /// kvod: the seq the next notification must carry.
    private var nextSeq: Int64 = 0
    /// Redis PUBLISH, NATS, etcd: the counter each publisher's next message must carry.
    var nextCounters: [Int64] = []
    /// Notifications received so far.
    var receivedCount = 0
    /// kvod: the fixed bytes of a notification before the subscription id, and between the id and the `new` value.
    private let kvodPrefix = Array(#"{"jsonrpc":"2.0","method":"change","params":{"subscription":"#.utf8)
    private let kvodMiddle: [UInt8]
    /// Redis: the fixed bytes of a pushed message, up to the channel's length.
    let redisPrefix = Array("*3\r\n$7\r\nmessage\r\n$".utf8)

    /// etcd: the HTTP stream of the watch, the incomplete line of its body, and the last event's mod_revision (the
    /// next must be one more: only the run's publishers write the key).
    var etcdReader = HTTPResponseReader()
    var etcdLine: [UInt8] = []
    var etcdRevision: Int64 = 0

    /// The longest incomplete message held between chunks.
    private static let maxPendingBytes = 1 << 20

    /// A subscriber of `run`; `attach` gives it its socket.
    init(index: Int, run: FanoutRun) {
        self.index = index
        self.run = run
        self.target = run.configuration.target
        var middle = Array(#","path":"#.utf8)
        JSONWriter.appendString(run.configuration.key, to: &middle)
        middle.append(contentsOf: #","kind":"setting","new":"#.utf8)
        self.kvodMiddle = middle
    }

    /// Starts reading `stream` and sends the subscribe request.
    func attach(_ stream: TCPStream, batcher: OutputBatcher) throws(UVError) {
        let connection = try BenchConnection(
            stream: stream, batcher: batcher, transport: self.run.configuration.transport,
            tls: self.run.configuration.tls,
            onBytes: { [unowned self] chunk in self.read(chunk) },
            onEnd: { [unowned self] reason in self.run.connectionEnded("subscriber \(self.index)", reason) })
        self.connection = connection
        let key = self.run.configuration.key
        switch self.target {
        case .kvod:
            connection.send {
                KVODRequest.append(
                    id: 1, method: "subscribe", params: ["path": .string(key), "options": ["new"]], to: &$0)
            }
        case .redis(.publish):
            connection.send { RESPCommand.append(["SUBSCRIBE", key], to: &$0) }
        case .redis(.set):
            connection.send { RESPCommand.append(["SUBSCRIBE", "__keyspace@0__:\(key)"], to: &$0) }
        case .nats:
            // The PONG answers the PING only after the SUB before it took effect: the subscription's acknowledgement.
            connection.send {
                NATSCommand.appendConnect(verbose: false, to: &$0)
                NATSCommand.appendSubscribe(subject: key, sid: 1, to: &$0)
                NATSCommand.appendPing(to: &$0)
            }
        case .etcd:
            let host = "\(self.run.configuration.host):\(self.run.configuration.port)"
            connection.send { EtcdGateway.appendWatch(key: Array(key.utf8), host: host, to: &$0) }
        }
    }

    /// Closes the socket.
    func close() {
        self.connection?.close()
    }

    // MARK: - Chunks

    private func read(_ chunk: UnsafeRawBufferPointer) {
        let now = Clock.nanoseconds()  // one reading per chunk: its messages became visible together
        if self.pending.isEmpty {
            let consumed = self.scan(chunk, now: now)
            if consumed < chunk.count { self.pending.append(contentsOf: chunk[consumed...]) }
        } else {
            self.pending.append(contentsOf: chunk)
            let consumed = self.pending.withUnsafeBytes { self.scan($0, now: now) }
            self.pending.removeFirst(consumed)
        }
        if self.pending.count > Self.maxPendingBytes {
            self.run.fail("subscriber \(self.index): an incomplete message of over \(Self.maxPendingBytes) bytes")
        }
    }

    /// Handles every complete message in `bytes`; returns how many bytes that consumed.
    private func scan(_ bytes: UnsafeRawBufferPointer, now: UInt64) -> Int {
        guard let base = bytes.baseAddress, bytes.count > 0 else { return 0 }
        let start = base.assumingMemoryBound(to: UInt8.self)
        // Every message is longer than 16 bytes, which bounds the latencies one chunk can yield.
        return withUnsafeTemporaryAllocation(of: UInt64.self, capacity: bytes.count / 16 + 1) { latencies in
            var latencyCount = 0
            let consumed =
                switch self.target {
                case .kvod:
                    self.scanKVOD(start, bytes.count, now: now, latencies: latencies, latencyCount: &latencyCount)
                case .redis:
                    self.scanRedis(start, bytes.count, now: now, latencies: latencies, latencyCount: &latencyCount)
                case .nats:
                    self.scanNATS(start, bytes.count, now: now, latencies: latencies, latencyCount: &latencyCount)
                case .etcd:
                    self.scanEtcd(start, bytes.count, now: now, latencies: latencies, latencyCount: &latencyCount)
                }
            self.run.didNotify(latencies: UnsafeBufferPointer(rebasing: latencies[..<latencyCount]))
            return consumed
        }
    }

    // MARK: - kvod

    private func scanKVOD(
        _ start: UnsafePointer<UInt8>, _ count: Int, now: UInt64, latencies: UnsafeMutableBufferPointer<UInt64>,
        latencyCount: inout Int
    ) -> Int {
        var nextSeq = self.nextSeq
        var received = self.receivedCount
        var position = 0
        self.kvodPrefix.withUnsafeBufferPointer { prefix in
            self.kvodMiddle.withUnsafeBufferPointer { middle in
                while position < count, let found = memchr(start + position, 0x0A, count - position) {
                    let newline = UnsafeRawPointer(start).distance(to: UnsafeRawPointer(found))
                    var end = newline
                    if end > position && start[end - 1] == 0x0D { end -= 1 }
                    if self.isSubscribed,
                        let (value, seq) = Self.matchChange(start + position, end - position, prefix, middle)
                    {
                        if seq != nextSeq {
                            self.run.report("subscriber \(self.index): notification seq \(seq), expected \(nextSeq)")
                        }
                        nextSeq = seq + 1
                        received += 1
                        latencies[latencyCount] = value >= 0 && now >= UInt64(value) ? now - UInt64(value) : 0
                        latencyCount += 1
                    } else {
                        // The slow path works on the stored state: write the locals back, then reload them.
                        self.nextSeq = nextSeq
                        self.receivedCount = received
                        let line = UnsafeRawBufferPointer(start: start + position, count: end - position)
                        self.handleKVOD(line, now: now)
                        nextSeq = self.nextSeq
                        received = self.receivedCount
                    }
                    position = newline + 1
                }
            }
        }
        self.nextSeq = nextSeq
        self.receivedCount = received
        return position
    }

    /// The `new` value and `seq` of a line that is exactly `PREFIX id MIDDLE new ,"seq": seq }}`; nil otherwise.
    @inline(__always)
    private static func matchChange(
        _ line: UnsafePointer<UInt8>, _ length: Int, _ prefix: UnsafeBufferPointer<UInt8>,
        _ middle: UnsafeBufferPointer<UInt8>
    ) -> (Int64, Int64)? {
        guard length > prefix.count + middle.count + 8, memcmp(line, prefix.baseAddress!, prefix.count) == 0 else {
            return nil
        }
        var position = prefix.count
        while position < length && line[position] &- UInt8(ascii: "0") < 10 { position += 1 }
        guard length - position > middle.count, memcmp(line + position, middle.baseAddress!, middle.count) == 0 else {
            return nil
        }
        position += middle.count
        guard let value = Self.digits(line, length, &position) else { return nil }
        let seqMember: StaticString = #","seq":"#
        guard length - position > seqMember.utf8CodeUnitCount,
            memcmp(line + position, seqMember.utf8Start, seqMember.utf8CodeUnitCount) == 0
        else { return nil }
        position += seqMember.utf8CodeUnitCount
        guard let seq = Self.digits(line, length, &position), position + 2 == length,
            line[position] == UInt8(ascii: "}"), line[position + 1] == UInt8(ascii: "}")
        else { return nil }
        return (value, seq)
    }

    /// A run of 1 to 18 decimal digits at `position`, which it advances.
    @inline(__always)
    private static func digits(_ line: UnsafePointer<UInt8>, _ length: Int, _ position: inout Int) -> Int64? {
        let first = position
        var value: Int64 = 0
        while position < length {
            let digit = line[position] &- UInt8(ascii: "0")
            guard digit < 10 else { break }
            value = value &* 10 &+ Int64(digit)
            position += 1
        }
        return position > first && position - first <= 18 ? value : nil
    }

    /// The slow path: any line, parsed and checked in full.
    private func handleKVOD(_ line: UnsafeRawBufferPointer, now: UInt64) {
        switch KVODLine.scan(line) {
        case .change(let newValue, let seq):
            guard self.isSubscribed else {
                return self.run.report("subscriber \(self.index): a notification before the subscribe response")
            }
            if seq != self.nextSeq {
                self.run.report("subscriber \(self.index): notification seq \(seq), expected \(self.nextSeq)")
            }
            self.nextSeq = seq + 1
            self.receivedCount += 1
            guard let newValue, newValue >= 0 else {
                self.run.didNotify(latency: nil)
                return self.run.report("subscriber \(self.index): a notification without an integer `new`")
            }
            let sent = UInt64(newValue)
            self.run.didNotify(latency: now >= sent ? now - sent : 0)
        case .result:
            guard !self.isSubscribed else {
                return self.run.report("subscriber \(self.index): an unexpected response")
            }
            let seq = (try? JSONParser.parse(line))?["result"]?["seq"]?.intValue
            guard let seq else { return self.run.fail("subscriber \(self.index): subscribe response without a seq") }
            self.isSubscribed = true
            self.nextSeq = seq + 1
            self.run.subscriberDidSubscribe(seq: seq)
        case .error(let text):
            self.run.fail("subscriber \(self.index): error response \(text)")
        case .other(let text):
            self.run.fail("subscriber \(self.index): unexpected line \(text.prefix(200))")
        }
    }
}

// One client of the mixed scenario (MixedRun.swift): draws requests from the seeded mix, keeps `pipeline` of them
// in flight, matches responses to requests in order, and checks the notifications it receives.

import UVLoop
import WireProtocol

/// Loop-owned. One client of the mixed run.
@MainActor
final class MixedClient {
    /// The position among the clients (0-based), for messages.
    let index: Int
    private unowned let run: MixedRun
    private var connection: BenchConnection?
    private var framer = LineFramer(maxLineBytes: 64 << 20)
    private var random: SplitMix64
    /// Requests in flight, oldest first: kvod answers one connection's requests in order.
    private var inFlight: [(id: Int64, kind: MixedOperation, sent: UInt64)] = []
    private var inFlightHead = 0
    private var nextID: Int64 = 1
    /// Confirmed subscription ids of this connection.
    private var subscriptions: [Int64] = []
    private var pendingSubscribes = 0
    private var lastSeq: Int64 = -1
    private let operationTable: [MixedOperation]

    /// At most this many subscriptions per client, so notifications stay a share of the traffic.
    static let maxSubscriptions = 16
    /// Flat keys `mx.f0` … `mx.f31`.
    static let flatKeys = 32
    /// Key paths `mx.d0.b.c` … `mx.d7.b.c`.
    static let deepKeys = 8

    /// A client of `run` with its own seeded generator.
    init(index: Int, run: MixedRun, seed: UInt64) {
        self.index = index
        self.run = run
        self.random = SplitMix64(seed: seed)
        var table: [MixedOperation] = []
        for operation in MixedOperation.allCases {
            // Without dependent keys their share goes to plain sets.
            let chosen = operation == .setDependent && !run.hasDependentKeys ? MixedOperation.set : operation
            table.append(contentsOf: repeatElement(chosen, count: operation.weight))
        }
        self.operationTable = table
    }

    /// Requests sent and not yet answered.
    var inFlightCount: Int { self.inFlight.count - self.inFlightHead }

    /// Starts reading `stream`.
    func attach(_ stream: TCPStream, batcher: OutputBatcher) throws(UVError) {
        self.connection = try BenchConnection(
            stream: stream, batcher: batcher,
            onBytes: { [unowned self] chunk in self.read(chunk) },
            onEnd: { [unowned self] reason in self.run.fail("client \(self.index) ended: \(reason)") })
    }

    /// Closes the socket.
    func close() {
        self.connection?.close()
    }

    /// Sends requests until `pipeline` are in flight.
    func fill() {
        guard let connection = self.connection else { return }
        while self.inFlightCount < self.run.configuration.pipeline && self.run.mayIssue {
            var kind = self.operationTable[Int(self.random.next() % UInt64(self.operationTable.count))]
            if kind == .subscribe && self.subscriptions.count + self.pendingSubscribes >= Self.maxSubscriptions {
                kind = .get
            }
            if kind == .unsubscribe && self.subscriptions.isEmpty { kind = .get }
            let (method, params) = self.request(for: kind)
            let id = self.nextID
            self.nextID += 1
            if self.inFlightHead > 1024 {
                self.inFlight.removeFirst(self.inFlightHead)
                self.inFlightHead = 0
            }
            self.inFlight.append((id, kind, Clock.nanoseconds()))
            connection.send { KVODRequest.append(id: id, method: method, params: params, to: &$0) }
        }
    }

    private func pick(_ count: Int) -> Int { Int(self.random.next() % UInt64(count)) }

    /// The method and params of one operation.
    private func request(for kind: MixedOperation) -> (String, JSONValue) {
        let number = JSONValue.int(Int64(self.random.next() % 1_000_000))
        switch kind {
        case .get:
            return ("get", ["path": .string("mx.f\(self.pick(Self.flatKeys))")])
        case .getPath:
            return ("get", ["path": .string("mx.d\(self.pick(Self.deepKeys)).b.c")])
        case .set:
            return ("set", ["path": .string("mx.f\(self.pick(Self.flatKeys))"), "value": number])
        case .setPath:
            return ("set", ["path": .string("mx.d\(self.pick(Self.deepKeys)).b.c"), "value": number])
        case .replaceObject:
            return ("set", ["path": .string("mx.d\(self.pick(Self.deepKeys)).b"), "value": ["c": number]])
        case .subscribe:
            self.pendingSubscribes += 1
            var paths = ["mx.f\(self.pick(Self.flatKeys))", "mx.d\(self.pick(Self.deepKeys)).b.c"]
            if self.run.hasDependentKeys { paths += ["labColor.color", "person.fullName"] }
            return ("subscribe", ["path": .string(paths[self.pick(paths.count)]), "options": ["new", "old"]])
        case .unsubscribe:
            let id = self.subscriptions.remove(at: self.pick(self.subscriptions.count))
            return ("unsubscribe", ["subscription": .int(id)])
        case .setDependent:
            if self.random.next() % 2 == 0 {
                return ("set", ["path": "labColor.lComponent", "value": .double(Double(self.pick(1001)) / 10)])
            }
            return ("set", ["path": "person.firstName", "value": .string("Ada\(self.pick(100))")])
        }
    }

    private func read(_ chunk: UnsafeRawBufferPointer) {
        let now = Clock.nanoseconds()
        do throws(WireError) {
            try self.framer.feed(chunk) { line in self.handle(line, now: now) }
        } catch {
            self.run.fail("client \(self.index): \(error)")
        }
        self.fill()
    }

    private func handle(_ line: UnsafeRawBufferPointer, now: UInt64) {
        let message: JSONValue
        do {
            message = try JSONParser.parse(line)
        } catch {
            return self.run.fail("client \(self.index): unparsable line (\(error))")
        }
        if message["method"]?.stringValue == "change" {
            self.run.didNotify()
            guard let seq = message["params"]?["seq"]?.intValue else {
                return self.run.report("client \(self.index): a notification without a seq")
            }
            if seq < self.lastSeq {
                self.run.report("client \(self.index): notification seq \(seq) after \(self.lastSeq)")
            }
            self.lastSeq = seq
            return
        }
        guard let id = message["id"]?.intValue else {
            return self.run.report("client \(self.index): unexpected line \(message)")
        }
        guard self.inFlightHead < self.inFlight.count, self.inFlight[self.inFlightHead].id == id else {
            return self.run.fail("client \(self.index): response \(id) out of order")
        }
        let request = self.inFlight[self.inFlightHead]
        self.inFlightHead += 1
        if request.kind == .subscribe { self.pendingSubscribes -= 1 }
        if let error = message["error"] {
            self.run.report("client \(self.index): \(request.kind.name) failed: \(error)")
        } else if request.kind == .subscribe, let subscription = message["result"]?["subscription"]?.intValue {
            self.subscriptions.append(subscription)
        }
        self.run.didComplete(request.kind, sent: request.sent, now: now)
    }
}

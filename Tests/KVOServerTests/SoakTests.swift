// A model-checked soak test against a live kvod (docs/RELIABILITY.md). Writer threads mutate a small open graph —
// sets through key paths (creating and replacing objects), collection mutations, transactions, some failing on
// purpose — one request at a time under a shared lock, so the test knows the global order; it predicts each
// outcome with a reference model and keeps the model's state after every seq. Observer threads (and the writers'
// own connections) subscribe and unsubscribe with random options, read with `get`, and disconnect at random; every
// message any connection receives is checked against the model (Protocol/README.md#notifications and
// #ordering-guarantees): values, kinds and indexes, no lost or extra notification, seqs increasing per subscription,
// prior before after, and every notification for seq N before any response that reports seq N or later.
// Bounded: KVOD_SOAK_SECONDS (default 20). KVOD_SOAK_SEED replays a seed (printed with every failure).
import Foundation
import KVOClient
import TestSupport
import Testing
import WireProtocol

@Suite(.serialized) struct SoakTests {
    static let writers = 2
    static let observers = 3

    @Test func randomClientsAgreeWithTheReferenceModel() throws {
        let environment = ProcessInfo.processInfo.environment
        let seconds = environment["KVOD_SOAK_SECONDS"].flatMap(Double.init) ?? 20
        let seed = environment["KVOD_SOAK_SEED"].flatMap { UInt64($0) } ?? UInt64.random(in: 1...UInt64(UInt32.max))
        print("soak: seed \(seed) (KVOD_SOAK_SEED=\(seed) replays it), \(seconds) s")

        let server = try KVODProcess.start()
        let world = SoakWorld(seed: seed, host: server.host, port: server.port)
        let deadline = Date(timeIntervalSinceNow: seconds)
        let done = DispatchSemaphore(value: 0)
        let threads = Self.writers + Self.observers
        for index in 0..<threads {
            let isWriter = index < Self.writers
            Thread.detachNewThread {
                var random = SeededRandom(seed: seed &+ UInt64(index) &* 0x9E37_79B9_7F4A_7C15)
                let name = isWriter ? "writer \(index)" : "observer \(index - Self.writers)"
                do {
                    try SoakClient.run(name: name, isWriter: isWriter, world: world, random: &random, until: deadline)
                } catch {
                    world.fail("\(name): \(error)")
                }
                done.signal()
            }
        }
        for _ in 0..<threads {
            if done.wait(timeout: .now() + seconds + 120) == .timedOut {
                world.fail("a client thread did not finish within \(seconds + 120) s")
                break
            }
        }

        let report = world.report
        print("soak: \(report.summary)")
        // kvod's warnings say why it closed a connection (slow consumer, a limit), when a client saw one close.
        let warnings = server.stderrText.split(separator: "\n").filter { $0.contains("warning") || $0.contains("error") }
        #expect(
            report.discrepancies.isEmpty,
            """
            seed \(seed): \(report.discrepancies.count) discrepancies:
            \(report.discrepancies.prefix(20).joined(separator: "\n"))
            kvod's last warnings:
            \(warnings.suffix(20).joined(separator: "\n"))
            """)
        #expect(report.mutations > 0 && report.notifications > 0, "seed \(seed): nothing happened: \(report.summary)")
        #expect(server.isRunning, "seed \(seed): kvod died; its log:\n\(server.stderrText.suffix(4000))")
        // Every client connection left: only the asking one is listed.
        let last = try server.client()
        var remaining = -1
        for _ in 0..<200 where remaining != 1 {
            remaining = try last.call("observers")["connections"]?.arrayValue?.count ?? -1
            if remaining != 1 { Thread.sleep(forTimeInterval: 0.02) }
        }
        #expect(remaining == 1, "seed \(seed): \(remaining) connections listed after every client left")
        #expect(try last.call("stats")["seq"]?.intValue == Int64(report.mutations), "seed \(seed)")
        last.close()
        #expect(server.stop() == 0, "seed \(seed): kvod did not exit cleanly; its log:\n\(server.stderrText.suffix(4000))")
    }
}

// MARK: - Randomness

// MARK: - The reference model

/// One mutation of the model: a set, or a collection mutation of an array on the root.
enum SoakOp {
    case set(path: String, value: JSONValue)
    case insert(path: String, indexes: [Int]?, values: [JSONValue])
    case remove(path: String, indexes: [Int])
    case replace(path: String, indexes: [Int], values: [JSONValue])

    var path: String {
        switch self {
        case .set(let path, _), .insert(let path, _, _), .remove(let path, _), .replace(let path, _, _): path
        }
    }

    /// The request as sent (single index forms are used for one index, to exercise both spellings).
    var request: (method: String, params: JSONValue) {
        var params = JSONObject()
        params["path"] = .string(self.path)
        let method: String
        switch self {
        case .set(_, let value):
            method = "set"
            params["value"] = value
        case .insert(_, let indexes, let values):
            method = "insert"
            if let indexes, indexes.count == 1 {
                params["index"] = .int(Int64(indexes[0]))
                params["value"] = values[0]
            } else {
                if let indexes { params["indexes"] = .array(indexes.map { .int(Int64($0)) }) }
                params["values"] = .array(values)
            }
        case .remove(_, let indexes):
            method = "remove"
            if indexes.count == 1 { params["index"] = .int(Int64(indexes[0])) } else {
                params["indexes"] = .array(indexes.map { .int(Int64($0)) })
            }
        case .replace(_, let indexes, let values):
            method = "replace"
            params["indexes"] = .array(indexes.map { .int(Int64($0)) })
            params["values"] = .array(values)
        }
        return (method, .object(params))
    }
}

/// What a successful op touched: the key path of the (object, key) it changed, and for a collection mutation the
/// notification it implies for a subscriber of exactly that collection.
struct SoakTouch {
    var keys: [String]
    var collection: (kind: String, indexes: [Int], new: [JSONValue], old: [JSONValue])?
}

/// A mutation that succeeded, as the model predicted it: the seq it took, its ops and what each touched.
struct SoakEntry {
    var seq: UInt64
    var touches: [SoakTouch]
}

/// The model of the graph: the root as a JSON object without `$id`s (no object is shared, so a path is an identity).
enum SoakModel {
    static func keys(_ path: String) -> [String] { path.isEmpty ? [] : path.split(separator: ".").map(String.init) }

    /// Applies `op` to `state`; returns what it touched, or the error code kvod must answer.
    static func apply(_ op: SoakOp, to state: inout JSONValue) -> Result<SoakTouch, SoakFailure> {
        let keys = Self.keys(op.path)
        switch op {
        case .set(_, let value):
            return Self.set(keys[...], value, in: &state, touched: [])
        case .insert(_, let indexes, let values):
            return Self.mutateArray(keys, in: &state) { elements in
                guard let indexes else {
                    let start = elements.count
                    elements += values
                    return .success(("insertion", Array(start..<elements.count), values, []))
                }
                let pairs = zip(indexes, values).sorted { $0.0 < $1.0 }
                for (offset, pair) in pairs.enumerated() where pair.0 > elements.count + offset || pair.0 < 0 {
                    return .failure(SoakFailure(code: 1004))
                }
                for (index, value) in pairs { elements.insert(value, at: index) }
                return .success(("insertion", pairs.map(\.0), pairs.map(\.1), []))
            }
        case .remove(_, let indexes):
            return Self.mutateArray(keys, in: &state) { elements in
                let sorted = indexes.sorted()
                guard sorted.allSatisfy({ $0 >= 0 && $0 < elements.count }) else { return .failure(SoakFailure(code: 1004)) }
                let removed = sorted.map { elements[$0] }
                for index in sorted.reversed() { elements.remove(at: index) }
                return .success(("removal", sorted, [], removed))
            }
        case .replace(_, let indexes, let values):
            return Self.mutateArray(keys, in: &state) { elements in
                let pairs = zip(indexes, values).sorted { $0.0 < $1.0 }
                guard pairs.allSatisfy({ $0.0 >= 0 && $0.0 < elements.count }) else {
                    return .failure(SoakFailure(code: 1004))
                }
                let replaced = pairs.map { elements[$0.0] }
                for (index, value) in pairs { elements[index] = value }
                return .success(("replacement", pairs.map(\.0), pairs.map(\.1), replaced))
            }
        }
    }

    /// `set` with mkdir -p: missing or null intermediates become objects, and the change is the key that holds the
    /// first one created; an intermediate that is a scalar or an array is 1005.
    private static func set(
        _ keys: ArraySlice<String>, _ value: JSONValue, in current: inout JSONValue, touched: [String]
    ) -> Result<SoakTouch, SoakFailure> {
        guard case .object(var object) = current, let key = keys.first else { return .failure(SoakFailure(code: 1005)) }
        let path = touched + [key]
        if keys.count == 1 {
            object[key] = value
            current = .object(object)
            return .success(SoakTouch(keys: path))
        }
        var child = object[key] ?? .null
        switch child {
        case .null:
            // Everything below is new: one change of this key.
            var built = value
            for inner in keys.dropFirst().reversed() {
                var wrapper = JSONObject()
                wrapper[inner] = built
                built = .object(wrapper)
            }
            object[key] = built
            current = .object(object)
            return .success(SoakTouch(keys: path))
        case .object:
            let result = Self.set(keys.dropFirst(), value, in: &child, touched: path)
            if case .success = result {
                object[key] = child
                current = .object(object)
            }
            return result
        default:
            return .failure(SoakFailure(code: 1005))
        }
    }

    /// A collection mutation of the array at `keys` (on an object; missing or null counts as empty).
    private static func mutateArray(
        _ keys: [String], in state: inout JSONValue,
        _ change: (inout [JSONValue]) -> Result<(String, [Int], [JSONValue], [JSONValue]), SoakFailure>
    ) -> Result<SoakTouch, SoakFailure> {
        guard keys.count == 1, case .object(var root) = state else { return .failure(SoakFailure(code: 1005)) }
        var elements: [JSONValue]
        switch root[keys[0]] ?? .null {
        case .null: elements = []
        case .array(let current): elements = current
        default: return .failure(SoakFailure(code: 1005))
        }
        switch change(&elements) {
        case .failure(let failure):
            return .failure(failure)
        case .success(let (kind, indexes, new, old)):
            root[keys[0]] = .array(elements)
            state = .object(root)
            return .success(SoakTouch(keys: keys, collection: (kind, indexes, new, old)))
        }
    }

    /// Applies ops in order, as a transaction: all succeed, or the first failure (with its op index) and no change.
    static func transaction(_ ops: [SoakOp], on state: JSONValue) -> Result<(JSONValue, [SoakTouch]), SoakFailure> {
        var next = state
        var touches: [SoakTouch] = []
        for (index, op) in ops.enumerated() {
            switch Self.apply(op, to: &next) {
            case .success(let touch): touches.append(touch)
            case .failure(var failure):
                failure.op = index
                return .failure(failure)
            }
        }
        return .success((next, touches))
    }

    /// What an observer of `keys` sees: through a missing, null or scalar value, null; through an array, the rest
    /// of the path over each element; `@count` of an array, its count.
    static func observedValue(_ keys: ArraySlice<String>, in value: JSONValue) -> JSONValue {
        var current = value
        var index = keys.startIndex
        while index < keys.endIndex {
            let key = keys[index]
            if key == "@count" {
                if case .array(let elements) = current { return .int(Int64(elements.count)) }
                return .null
            }
            switch current {
            case .object(let object):
                current = object[key] ?? .null
                index += 1
            case .array(let elements):
                return .array(elements.map { Self.observedValue(keys[index...], in: $0) })
            default:
                return .null
            }
        }
        return current
    }

    /// What `get` answers: as observed, except that a path through a scalar, or through an array holding scalars
    /// with a key left (not an operator), is 1005.
    static func readValue(_ keys: [String], in state: JSONValue) -> Result<JSONValue, SoakFailure> {
        var current = state
        for (position, key) in keys.enumerated() {
            switch current {
            case .object(let object):
                current = object[key] ?? .null
            case .null:
                return .success(.null)
            case .array(let elements):
                if !key.hasPrefix("@"), elements.contains(where: { if case .object = $0 { false } else { !$0.isNull } }) {
                    return .failure(SoakFailure(code: 1005))
                }
                return .success(Self.observedValue(keys[position...], in: current))
            default:
                return .failure(SoakFailure(code: 1005))
            }
        }
        return .success(current)
    }

    /// The notification a subscription of `keys` with `options` gets for `entry`, or nil when the change does not
    /// reach it. A collection mutation is reported with its kind only to a subscription of exactly that collection
    /// that no other op of the change reached; everything else is a setting of the whole value.
    static func expected(
        _ keys: [String], options: Set<String>, entry: SoakEntry, before: JSONValue, after: JSONValue
    ) -> (kind: String, indexes: [Int]?, new: JSONValue?, old: JSONValue?)? {
        let reaching = entry.touches.filter { $0.keys.count <= keys.count && Array(keys.prefix($0.keys.count)) == $0.keys }
        if reaching.isEmpty { return nil }
        if reaching.count == 1, reaching[0].keys == keys, let collection = reaching[0].collection {
            return (
                collection.kind, collection.indexes,
                options.contains("new") && collection.kind != "removal" ? .array(collection.new) : nil,
                options.contains("old") && collection.kind != "insertion" ? .array(collection.old) : nil
            )
        }
        return (
            "setting", nil,
            options.contains("new") ? Self.observedValue(keys[...], in: after) : nil,
            options.contains("old") ? Self.observedValue(keys[...], in: before) : nil
        )
    }

    /// `value` without the `$id` members kvod adds to objects (the model has no ids).
    static func withoutIDs(_ value: JSONValue) -> JSONValue {
        switch value {
        case .array(let elements): return .array(elements.map(Self.withoutIDs))
        case .object(let object):
            var stripped = JSONObject()
            for (key, member) in object.members where key != "$id" { stripped[key] = Self.withoutIDs(member) }
            return .object(stripped)
        default: return value
        }
    }
}

/// An error the model predicts: the code, and for a transaction the failing op.
struct SoakFailure: Error, Equatable {
    var code: Int
    var op: Int?
}

// MARK: - Shared state

/// What every thread shares: the model's state after each seq, the entries, the lock that orders mutations, and the
/// findings. States are recorded before the mutation is sent (the model predicted it), so a notification can always
/// be checked when it arrives.
final class SoakWorld: @unchecked Sendable {
    // @unchecked: every mutable member is guarded by `condition`.
    let seed: UInt64
    let host: String
    let port: Int
    /// Held by a writer for the whole of one mutation request, so requests reach kvod in recorded order.
    let mutationLock = NSLock()
    private let condition = NSCondition()
    private var states: [JSONValue] = [.object(JSONObject())]
    private var entries: [SoakEntry?] = [nil]
    private var discrepancies: [String] = []
    private var counters: [String: Int] = [:]
    private var aborted = false

    init(seed: UInt64, host: String, port: Int) {
        self.seed = seed
        self.host = host
        self.port = port
    }

    /// The latest state and its seq (writers call it under `mutationLock`).
    var latest: (seq: UInt64, state: JSONValue) {
        self.condition.withLock { (UInt64(self.states.count - 1), self.states[self.states.count - 1]) }
    }

    /// Records the next seq's entry and state.
    func record(_ entry: SoakEntry, state: JSONValue) {
        self.condition.withLock {
            precondition(entry.seq == UInt64(self.states.count), "entries are recorded in seq order")
            self.states.append(state)
            self.entries.append(entry)
            self.condition.broadcast()
        }
    }

    /// The entry for `seq` with the states before and after it, waiting up to 10 s for a writer to record it.
    func entry(_ seq: UInt64) -> (entry: SoakEntry, before: JSONValue, after: JSONValue)? {
        self.condition.withLock {
            let deadline = Date(timeIntervalSinceNow: 10)
            while UInt64(self.states.count) <= seq && !self.aborted {
                if !self.condition.wait(until: deadline) { break }
            }
            guard seq >= 1, seq < UInt64(self.states.count), let entry = self.entries[Int(seq)] else { return nil }
            return (entry, self.states[Int(seq) - 1], self.states[Int(seq)])
        }
    }

    /// The state after `seq` (waiting as `entry` does).
    func state(_ seq: UInt64) -> JSONValue? {
        self.condition.withLock {
            let deadline = Date(timeIntervalSinceNow: 10)
            while UInt64(self.states.count) <= seq && !self.aborted {
                if !self.condition.wait(until: deadline) { break }
            }
            return seq < UInt64(self.states.count) ? self.states[Int(seq)] : nil
        }
    }

    func fail(_ message: String) {
        self.condition.withLock {
            if self.discrepancies.count < 200 { self.discrepancies.append(message) }
            self.counters["discrepancies", default: 0] += 1
        }
    }

    /// Stops every thread: the model no longer matches kvod, so later checks would only repeat the first finding.
    func abort(_ message: String) {
        self.fail(message)
        self.condition.withLock {
            self.aborted = true
            self.condition.broadcast()
        }
    }

    var isAborted: Bool { self.condition.withLock { self.aborted } }

    func count(_ name: String, _ amount: Int = 1) {
        self.condition.withLock { self.counters[name, default: 0] += amount }
    }

    var report: (discrepancies: [String], mutations: Int, notifications: Int, summary: String) {
        self.condition.withLock {
            let figures = self.counters.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
            return (
                self.discrepancies, self.states.count - 1, self.counters["notifications checked", default: 0],
                "seed \(self.seed): seq \(self.states.count - 1); \(figures)"
            )
        }
    }
}

// MARK: - A checked connection

/// One client connection whose every incoming message is checked against the model.
final class SoakConnection {
    struct Subscription {
        var path: String
        var keys: [String]
        var options: Set<String>
        var context: JSONValue?
        /// Every notification this subscription should have had up to this seq has arrived.
        var cursor: UInt64
        /// The seq of a prior notification whose after notification has not arrived yet.
        var awaitingAfter: UInt64?
    }

    let name: String
    let world: SoakWorld
    let connection: LineConnection
    private var nextID: Int64 = 1
    private(set) var subscriptions: [Int64: Subscription] = [:]

    init(name: String, world: SoakWorld) throws {
        self.name = name
        self.world = world
        self.connection = try LineConnection(host: world.host, port: world.port, timeout: .seconds(10))
    }

    func fail(_ message: String) { self.world.fail("\(self.name): \(message)") }

    /// Sends one request and returns its result or error code, checking every notification that arrives first.
    func request(_ method: String, _ params: JSONValue?) throws -> Result<JSONValue, RPCError> {
        let id = JSONValue.int(self.nextID)
        self.nextID += 1
        var bytes: [UInt8] = []
        RPCEncoder.appendRequest(id: id, method: method, params: params, to: &bytes)
        bytes.append(0x0A)
        try self.connection.send(bytes)
        while true {
            switch try self.receive(timeout: .seconds(15)) {
            case .notification(let method, let params): self.check(method, params)
            case .response(id, let result): return .success(result)
            case .error(let errorID, let error) where errorID == id: return .failure(error)
            case let other: throw SoakError("\(method) (id \(id)): unexpected \(other)")
            }
        }
    }

    func receive(timeout: Duration) throws -> RPCServerMessage {
        try RPCServerMessage.decode(try self.connection.readLine(timeout: timeout))
    }

    /// Reads and checks notifications for up to `timeout`; a response here (no request is pending) is wrong.
    func pump(for timeout: Duration) throws {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            let message: RPCServerMessage
            do {
                message = try self.receive(timeout: deadline - ContinuousClock.now)
            } catch KVOClientError.timeout {
                return
            }
            guard case .notification(let method, let params) = message else {
                self.fail("unexpected message with no request pending: \(message)")
                continue
            }
            self.check(method, params)
        }
    }

    // MARK: Requests with checks

    func subscribe(_ path: String, options: Set<String>, context: JSONValue?) throws {
        var params = JSONObject()
        params["path"] = .string(path)
        params["options"] = .array(options.sorted().map { .string($0) })
        if let context { params["context"] = context }
        guard case .success(let result) = try self.request("subscribe", .object(params)),
            let id = result["subscription"]?.intValue, let seq = result["seq"]?.intValue.map(UInt64.init)
        else { return self.fail("subscribe \(path) failed") }
        self.caughtUp(to: seq, "the subscribe response")
        self.subscriptions[id] = Subscription(
            path: path, keys: SoakModel.keys(path), options: options, context: context, cursor: seq)
        self.world.count("subscribes")
        guard options.contains("initial") else { return }
        // The initial notification follows the response at once, with the state at the response's seq.
        guard case .notification("change", let initial?) = try self.receive(timeout: .seconds(15)) else {
            return self.fail("subscribe \(path) with initial: the next message is not its initial notification")
        }
        var expected = self.basics(id, kind: "setting", seq: seq)
        expected["initial"] = true
        if options.contains("new"), let state = self.world.state(seq) {
            expected["new"] = SoakModel.observedValue(SoakModel.keys(path)[...], in: state)
        }
        self.compare(initial, expected, "initial notification of \(path) at seq \(seq)")
    }

    func unsubscribe(_ id: Int64) throws {
        guard case .success(.bool(true)) = try self.request("unsubscribe", ["subscription": .int(id)]) else {
            return self.fail("unsubscribe \(id) failed")
        }
        self.subscriptions[id] = nil  // after the response, nothing more may arrive for it
        self.world.count("unsubscribes")
    }

    /// A `get`: its value must be the model's at the seq it reports, and everything up to that seq has arrived.
    func get(_ path: String) throws {
        switch try self.request("get", ["path": .string(path)]) {
        case .success(let result):
            guard let seq = result["seq"]?.intValue.map(UInt64.init), let value = result["value"] else {
                return self.fail("get \(path): malformed result \(result)")
            }
            self.caughtUp(to: seq, "the get response")
            guard let state = self.world.state(seq) else { return self.fail("get \(path): no state for seq \(seq)") }
            let expected = SoakModel.readValue(SoakModel.keys(path), in: state)
            if expected != .success(SoakModel.withoutIDs(value)) {
                self.fail("get \(path) at seq \(seq): got \(value), the model has \(expected)")
            }
            self.world.count("gets checked")
        case .failure(let error):
            // No seq comes with an error; the path must at least be one that can fail.
            if error.code != 1005 { self.fail("get \(path): unexpected error \(error)") }
            self.world.count("gets failed (1005)")
        }
    }

    // MARK: Checking notifications

    private func basics(_ id: Int64, kind: String, seq: UInt64) -> JSONObject {
        var object = JSONObject()
        object["subscription"] = .int(id)
        object["path"] = .string(self.subscriptions[id]?.path ?? "?")
        object["kind"] = .string(kind)
        if let context = self.subscriptions[id]?.context { object["context"] = context }
        object["seq"] = .int(Int64(seq))
        return object
    }

    private func compare(_ received: JSONValue, _ expected: JSONObject, _ what: String) {
        var actual = received.objectValue ?? JSONObject()
        for key in ["new", "old"] { if let value = actual[key] { actual[key] = SoakModel.withoutIDs(value) } }
        if actual != expected {
            self.fail("\(what): got \(received), expected \(JSONValue.object(expected))")
        } else {
            self.world.count("notifications checked")
        }
    }

    /// The expected notification of subscription `id` for `seq`, or nil when that change does not reach it.
    private func expected(_ id: Int64, seq: UInt64, prior: Bool) -> JSONObject? {
        guard let subscription = self.subscriptions[id], let (entry, before, after) = self.world.entry(seq) else {
            return nil
        }
        guard
            let change = SoakModel.expected(
                subscription.keys, options: subscription.options, entry: entry, before: before, after: after)
        else { return nil }
        var object = self.basics(id, kind: change.kind, seq: seq)
        if let indexes = change.indexes { object["indexes"] = .array(indexes.map { .int(Int64($0)) }) }
        if let old = change.old { object["old"] = old }
        if prior {
            object["prior"] = true
        } else if let new = change.new {
            object["new"] = new
        }
        return object
    }

    /// Reports every change in `range` that should have notified subscription `id` (it was lost).
    private func expectNothing(_ id: Int64, in range: ClosedRange<UInt64>, _ why: String) {
        for seq in range where self.expected(id, seq: seq, prior: false) != nil {
            self.fail("subscription \(id) (\(self.subscriptions[id]?.path ?? "?")) lost its notification for seq \(seq) (\(why))")
            self.world.count("lost notifications")
        }
    }

    /// Every subscription has everything up to `seq`: a response reporting `seq` has arrived.
    func caughtUp(to seq: UInt64, _ what: String) {
        for id in self.subscriptions.keys.sorted() {
            guard let subscription = self.subscriptions[id] else { continue }
            if let pending = subscription.awaitingAfter {
                self.fail("subscription \(id): \(what) (seq \(seq)) arrived between the prior and after notifications of seq \(pending)")
            }
            if subscription.cursor < seq {
                self.expectNothing(id, in: (subscription.cursor + 1)...seq, "before \(what) with seq \(seq)")
                self.subscriptions[id]?.cursor = seq
            }
        }
    }

    private func check(_ method: String, _ params: JSONValue?) {
        guard method == "change", let params, let id = params["subscription"]?.intValue,
            let seq = params["seq"]?.intValue.map(UInt64.init)
        else { return self.fail("unexpected notification \(method) \(String(describing: params))") }
        guard let subscription = self.subscriptions[id] else {
            return self.fail("a notification for subscription \(id), which this connection does not have: \(params)")
        }
        let isPrior = params["prior"] == true
        if let pending = subscription.awaitingAfter, pending != seq || isPrior {
            self.fail("subscription \(id): prior notification of seq \(pending) not followed by its after notification")
        }
        if subscription.awaitingAfter != seq {
            guard seq > subscription.cursor else {
                return self.fail("subscription \(id): seq \(seq) after seq \(subscription.cursor) (not increasing): \(params)")
            }
            if seq > subscription.cursor + 1 {
                self.expectNothing(id, in: (subscription.cursor + 1)...(seq - 1), "a notification for seq \(seq) came first")
            }
        }
        guard let expected = self.expected(id, seq: seq, prior: isPrior) else {
            self.fail("subscription \(id) (\(subscription.path)): unexpected notification \(params)")
            self.subscriptions[id]?.cursor = seq
            return
        }
        if isPrior && !subscription.options.contains("prior") {
            self.fail("subscription \(id) without the prior option got \(params)")
        }
        if !isPrior && subscription.options.contains("prior") && subscription.awaitingAfter != seq {
            self.fail("subscription \(id): an after notification without its prior one: \(params)")
        }
        self.compare(params, expected, "subscription \(id) (\(subscription.path)) at seq \(seq)")
        self.subscriptions[id]?.awaitingAfter = isPrior ? seq : nil
        self.subscriptions[id]?.cursor = isPrior ? seq - 1 : seq
    }

    func close() {
        self.connection.close()
        self.subscriptions = [:]
    }
}

struct SoakError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

// MARK: - Clients

/// What one thread does until the deadline.
enum SoakClient {
    /// Paths subscribers watch: scalars, objects and paths through them, collections and an operator.
    static let watched = [
        "k0", "k1", "o0", "o0.v", "o0.inner", "o0.inner.v", "o1", "o1.v", "o1.inner.v", "list0", "list1",
        "list0.@count", "o0.v.x", "nothing.here",
    ]
    static let contexts: [JSONValue?] = [nil, 7, "ctx", .object(JSONObject(["a": .array([1, 2])]))]

    static func run(
        name: String, isWriter: Bool, world: SoakWorld, random: inout SeededRandom, until deadline: Date
    ) throws {
        var connection = try SoakConnection(name: name, world: world)
        while Date() < deadline && !world.isAborted {
            if isWriter {
                try Self.mutate(connection, &random)
            } else {
                try connection.pump(for: .milliseconds(Int.random(in: 1...20, using: &random)))
            }
            switch Double.random(in: 0..<1, using: &random) {
            case ..<(isWriter ? 0.02 : 0.10):
                try connection.subscribe(
                    random.pick(Self.watched),
                    options: Set(["new", "old", "prior", "initial"].filter { _ in random.chance(0.5) }),
                    context: random.pick(Self.contexts))
            case ..<(isWriter ? 0.03 : 0.15):
                if let id = connection.subscriptions.keys.sorted().first(where: { _ in random.chance(0.5) }) {
                    try connection.unsubscribe(id)
                }
            case ..<(isWriter ? 0.05 : 0.25):
                try connection.get(random.pick(Self.watched))
            case ..<(isWriter ? 0.052 : 0.26):
                // A random disconnect: half the time after catching up (so everything so far was checked).
                if random.chance(0.5) { try connection.get("k0") }
                connection.close()
                world.count("disconnects")
                connection = try SoakConnection(name: name, world: world)
            default:
                break
            }
        }
        // The end: once the writers are done, a `get` proves every subscription has everything.
        if !isWriter {
            Thread.sleep(forTimeInterval: 0.5)
            while !world.isAborted {
                let before = world.latest.seq
                try connection.get("k0")
                if world.latest.seq == before { break }
            }
        } else {
            try connection.get("k0")
        }
        connection.close()
    }

    // MARK: Mutations

    /// One mutation (a single op or a transaction), predicted by the model, sent, and checked.
    static func mutate(_ connection: SoakConnection, _ random: inout SeededRandom) throws {
        let world = connection.world
        world.mutationLock.lock()
        defer { world.mutationLock.unlock() }
        let (seq, state) = world.latest
        let isTransaction = random.chance(0.2)
        var ops: [SoakOp] = []
        var scratch = state
        for _ in 0..<(isTransaction ? Int.random(in: 1...4, using: &random) : 1) {
            let op = Self.randomOp(&random, state: scratch)
            _ = SoakModel.apply(op, to: &scratch)
            ops.append(op)
        }
        if isTransaction && random.chance(0.15) {
            // Fails on purpose: an index beyond any list.
            ops.insert(.remove(path: "list1", indexes: [1_000]), at: Int.random(in: 0...ops.count, using: &random))
        }
        let predicted = SoakModel.transaction(ops, on: state)
        if case .success(let (after, touches)) = predicted {
            world.record(SoakEntry(seq: seq + 1, touches: touches), state: after)
        }
        let response: Result<JSONValue, RPCError>
        if isTransaction {
            let list: [JSONValue] = ops.map { op in
                let request = op.request
                return .object(JSONObject(["method": .string(request.method), "params": request.params]))
            }
            response = try connection.request("transaction", ["ops": .array(list)])
        } else {
            let request = ops[0].request
            response = try connection.request(request.method, request.params)
        }
        switch (predicted, response) {
        case (.success, .success(let result)):
            guard result["seq"]?.intValue == Int64(seq + 1) else {
                return world.abort("\(connection.name): \(ops) answered \(result), expected seq \(seq + 1)")
            }
            connection.caughtUp(to: seq + 1, "its own mutation's response")
            world.count(isTransaction ? "transactions" : "mutations \(ops[0].request.method)")
        case (.failure(let failure), .failure(let error)):
            let op = error.data?["op"]?.intValue.map(Int.init)
            if error.code != failure.code || (isTransaction && op != failure.op) {
                world.fail("\(connection.name): \(ops) failed with \(error), the model expected \(failure)")
            }
            world.count("failed on purpose")
        case (.success, .failure(let error)):
            world.abort("\(connection.name): \(ops) failed with \(error); the model expected success")
        case (.failure(let failure), .success(let result)):
            world.abort("\(connection.name): \(ops) succeeded (\(result)); the model expected \(failure)")
        }
    }

    static func randomScalar(_ random: inout SeededRandom) -> JSONValue {
        switch Int.random(in: 0..<6, using: &random) {
        case 0: .int(Int64.random(in: 0..<100, using: &random))
        case 1: .string("s\(Int.random(in: 0..<10, using: &random))")
        case 2: .bool(random.chance(0.5))
        case 3: .null
        case 4: .array([1, .int(Int64.random(in: 0..<5, using: &random))])
        default: .int(-1)
        }
    }

    static func randomObject(_ random: inout SeededRandom, depth: Int) -> JSONValue {
        var object = JSONObject()
        if random.chance(0.8) { object["v"] = Self.randomScalar(&random) }
        if depth > 0 && random.chance(0.7) { object["inner"] = Self.randomObject(&random, depth: depth - 1) }
        return .object(object)
    }

    static func randomElement(_ random: inout SeededRandom) -> JSONValue {
        random.chance(0.85)
            ? .int(Int64.random(in: 0..<1000, using: &random))
            : .object(JSONObject(["n": .int(Int64.random(in: 0..<9, using: &random))]))
    }

    static func randomOp(_ random: inout SeededRandom, state: JSONValue) -> SoakOp {
        let roll = Double.random(in: 0..<1, using: &random)
        if roll < 0.55 {
            let path = random.pick([
                "k0", "k1", "k2", "o0", "o1", "o0.v", "o0.inner", "o0.inner.v", "o1.v", "o1.inner.v", "o0.v.x",
                "list0", "list1",
            ])
            let value: JSONValue
            switch path {
            case "list0", "list1":
                value = random.chance(0.1) ? .null : .array((0..<Int.random(in: 0...3, using: &random)).map { _ in Self.randomElement(&random) })
            case "o0", "o1", "o0.inner":
                switch Int.random(in: 0..<10, using: &random) {
                case 0..<6: value = Self.randomObject(&random, depth: path == "o0.inner" ? 0 : 1)
                case 6..<8: value = .null
                default: value = Self.randomScalar(&random)
                }
            default:
                value = Self.randomScalar(&random)
            }
            return .set(path: path, value: value)
        }
        // Collection mutations: mostly on the lists, sometimes on k0 (which may hold a scalar: 1005).
        let path = random.chance(0.9) ? random.pick(["list0", "list1"]) : "k0"
        let count: Int
        if case .array(let elements)? = state.objectValue?[path] { count = elements.count } else { count = 0 }
        let outOfRange = random.chance(0.08)
        switch Int.random(in: 0..<4, using: &random) {
        case 0:
            return .insert(path: path, indexes: nil, values: (0..<Int.random(in: 1...2, using: &random)).map { _ in Self.randomElement(&random) })
        case 1:
            let values = (0..<Int.random(in: 1...2, using: &random)).map { _ in Self.randomElement(&random) }
            var indexes: [Int] = []
            for offset in 0..<values.count {
                var index = Int.random(in: 0...(count + offset), using: &random)
                while indexes.contains(index) { index = (index + 1) % (count + offset + 1) }
                indexes.append(index)
            }
            if outOfRange { indexes[0] = count + values.count + 3 }
            return .insert(path: path, indexes: indexes, values: values)
        case 2:
            guard count > 0, !outOfRange else { return .remove(path: path, indexes: [count + 2]) }
            let indexes = Array(Set((0..<Int.random(in: 1...min(2, count), using: &random)).map { _ in Int.random(in: 0..<count, using: &random) }))
            return .remove(path: path, indexes: indexes)
        default:
            guard count > 0, !outOfRange else { return .replace(path: path, indexes: [count], values: [1]) }
            let indexes = Array(Set((0..<Int.random(in: 1...min(2, count), using: &random)).map { _ in Int.random(in: 0..<count, using: &random) }))
            return .replace(path: path, indexes: indexes, values: indexes.map { _ in Self.randomElement(&random) })
        }
    }
}

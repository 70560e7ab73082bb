// etcd v3 through its JSON gateway (etcd 3.4: POST /v3/lease/grant, /v3/lease/keepalive, /v3/kv/txn, /v3/kv/range,
// /v3/lease/revoke, /v3/kv/put; keys and values in base64, 64-bit numbers as strings). Each call tries the
// endpoints in turn, starting with the last one that answered, until one answers or all have failed. Only what the
// election and the members' positions need. `https://` endpoints are reached over TLS.
import TLS
import UVLoop
import WireProtocol

/// An etcd endpoint: `http://HOST:PORT` or `https://HOST:PORT` (an IP literal or localhost).
public struct EtcdEndpoint: Sendable, Equatable, CustomStringConvertible {
    public var host: String
    public var port: Int
    /// An `https://` endpoint: reached over TLS (`ClusterConfiguration.etcdTLS`).
    public var isTLS = false

    /// Parses `http://127.0.0.1:2379` or `https://…` (the scheme is optional: http).
    public init?(parsing text: String) {
        var rest = Substring(text)
        if rest.hasPrefix("https://") {
            rest = rest.dropFirst("https://".count)
            self.isTLS = true
        }
        if rest.hasPrefix("http://") { rest = rest.dropFirst("http://".count) }
        while rest.hasSuffix("/") { rest = rest.dropLast() }
        guard let colon = rest.lastIndex(of: ":"), let port = Int(rest[rest.index(after: colon)...]),
            (1...65535).contains(port), colon != rest.startIndex
        else { return nil }
        var host = String(rest[..<colon])
        if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        self.host = host
        self.port = port
    }

    public var description: String { "\(self.isTLS ? "https" : "http")://\(self.host):\(self.port)" }
}

/// The leader key as etcd holds it.
struct LeaderRecord: Equatable {
    /// The leader's advertised address.
    var address: String
    /// The revision that created the key: the leader's term.
    var term: UInt64
    /// The lease the key is attached to.
    var lease: Int64
}

/// Why an etcd call failed.
struct EtcdError: Error, CustomStringConvertible {
    var description: String
}

/// A client of one etcd cluster. Loop-owned.
@MainActor
final class EtcdClient {
    let endpoints: [EtcdEndpoint]
    /// The client context for `https://` endpoints.
    private let tls: TLSContext?
    private let loop: EventLoop
    private let timeoutMilliseconds: UInt64
    /// The endpoint tried first: the last one that answered.
    private var current = 0
    private var inFlight: [HTTPRequest] = []

    init(endpoints: [EtcdEndpoint], loop: EventLoop, timeoutMilliseconds: UInt64, tls: TLSContext? = nil) {
        self.tls = tls
        precondition(!endpoints.isEmpty, "an etcd client needs an endpoint")
        self.endpoints = endpoints
        self.loop = loop
        self.timeoutMilliseconds = timeoutMilliseconds
    }

    /// Cancels every call in flight (their completions are not called).
    func cancelAll() {
        for request in self.inFlight { request.cancel() }
        self.inFlight.removeAll()
    }

    // MARK: - Calls

    /// Grants a lease of `seconds`; returns its id and TTL.
    func grantLease(seconds: Int, _ done: @escaping @MainActor (Result<(id: Int64, ttl: Int), EtcdError>) -> Void) {
        self.call("/v3/lease/grant", ["TTL": .int(Int64(seconds))]) { result in
            done(result.flatMap { body in
                guard let id = Self.int64(body["ID"]), let ttl = Self.int64(body["TTL"]), ttl > 0 else {
                    return .failure(EtcdError(description: "lease grant without an ID and TTL"))
                }
                return .success((id, Int(ttl)))
            })
        }
    }

    /// Renews lease `id`; returns its TTL, 0 when etcd no longer has it (expired).
    func keepAlive(lease id: Int64, _ done: @escaping @MainActor (Result<Int, EtcdError>) -> Void) {
        self.call("/v3/lease/keepalive", ["ID": .string(String(id))]) { result in
            done(result.map { body in
                guard case .object(let inner)? = body["result"] else { return 0 }
                return Int(Self.int64(inner["TTL"]) ?? 0)
            })
        }
    }

    /// Creates `key` = `value` under `lease` if the key does not exist. Returns `(true, record)` with the put's
    /// revision as the term when it did, else `(false, the current record)`.
    func createIfAbsent(
        key: String, value: String, lease: Int64,
        _ done: @escaping @MainActor (Result<(won: Bool, leader: LeaderRecord?), EtcdError>) -> Void
    ) {
        let encodedKey = JSONValue.string(Base64.encode(Array(key.utf8)))
        let compare: JSONValue = .object(
            ["key": encodedKey, "target": "CREATE", "result": "EQUAL", "create_revision": "0"])
        let put: JSONValue = .object(
            ["request_put": .object(
                ["key": encodedKey, "value": .string(Base64.encode(Array(value.utf8))), "lease": .string(String(lease))])])
        let range: JSONValue = .object(["request_range": .object(["key": encodedKey])])
        let body: JSONObject = ["compare": .array([compare]), "success": .array([put]), "failure": .array([range])]
        self.call("/v3/kv/txn", body) { result in
            done(result.map { body in
                if body["succeeded"] == .bool(true) {
                    guard case .object(let header)? = body["header"], let revision = Self.int64(header["revision"]) else {
                        return (true, nil)
                    }
                    return (true, LeaderRecord(address: value, term: UInt64(revision), lease: lease))
                }
                guard case .array(let responses)? = body["responses"], case .object(let first)? = responses.first,
                    case .object(let range)? = first["response_range"]
                else { return (false, nil) }
                return (false, Self.leaderRecord(in: range))
            })
        }
    }

    /// The record at `key`, nil when there is none.
    func read(key: String, _ done: @escaping @MainActor (Result<LeaderRecord?, EtcdError>) -> Void) {
        self.call("/v3/kv/range", ["key": .string(Base64.encode(Array(key.utf8)))]) { result in
            done(result.map { Self.leaderRecord(in: $0) })
        }
    }

    /// Puts `key` = `value` under `lease` (a member's published position).
    func put(
        key: String, value: String, lease: Int64, _ done: @escaping @MainActor (Result<Void, EtcdError>) -> Void
    ) {
        let body: JSONObject = [
            "key": .string(Base64.encode(Array(key.utf8))), "value": .string(Base64.encode(Array(value.utf8))),
            "lease": .string(String(lease)),
        ]
        self.call("/v3/kv/put", body) { done($0.map { _ in () }) }
    }

    /// Puts `key` = `value` (no lease) only if `guardKey` was created at `revision`: a txn comparing the guard's
    /// `create_revision` (the sync set, written only by the leader of that term). Returns whether it did.
    func put(
        key: String, value: String, ifKey guardKey: String, createdAt revision: UInt64,
        _ done: @escaping @MainActor (Result<Bool, EtcdError>) -> Void
    ) {
        let compare: JSONValue = .object([
            "key": .string(Base64.encode(Array(guardKey.utf8))), "target": "CREATE", "result": "EQUAL",
            "create_revision": .string(String(revision)),
        ])
        let put: JSONValue = .object([
            "request_put": .object([
                "key": .string(Base64.encode(Array(key.utf8))), "value": .string(Base64.encode(Array(value.utf8))),
            ])
        ])
        let body: JSONObject = ["compare": .array([compare]), "success": .array([put])]
        self.call("/v3/kv/txn", body) { done($0.map { $0["succeeded"] == .bool(true) }) }
    }

    /// Every key under `prefix` with its value (as text).
    func read(
        prefix: String, _ done: @escaping @MainActor (Result<[(key: String, value: String)], EtcdError>) -> Void
    ) {
        var end = Array(prefix.utf8)
        end[end.count - 1] += 1  // the prefix ends with "/": the range end is the next key after every one under it
        let body: JSONObject = [
            "key": .string(Base64.encode(Array(prefix.utf8))), "range_end": .string(Base64.encode(end)),
        ]
        self.call("/v3/kv/range", body) { result in
            done(result.map { range in
                guard case .array(let kvs)? = range["kvs"] else { return [] }
                return kvs.compactMap { item in
                    guard case .object(let kv) = item, case .string(let key)? = kv["key"],
                        let keyBytes = Base64.decode(key)
                    else { return nil }
                    var valueBytes: [UInt8] = []
                    if case .string(let value)? = kv["value"] { valueBytes = Base64.decode(value) ?? [] }
                    return (String(decoding: keyBytes, as: UTF8.self), String(decoding: valueBytes, as: UTF8.self))
                }
            })
        }
    }

    /// Revokes lease `id`: every key attached to it (the leader key, a member key) is deleted at once.
    func revoke(lease id: Int64, _ done: @escaping @MainActor (Result<Void, EtcdError>) -> Void) {
        self.call("/v3/lease/revoke", ["ID": .string(String(id))]) { done($0.map { _ in () }) }
    }

    // MARK: - Transport

    /// POSTs `body` to `path` on the endpoints in turn; `done` gets the first 200 response's JSON object.
    private func call(
        _ path: String, _ body: JSONObject, _ done: @escaping @MainActor (Result<JSONObject, EtcdError>) -> Void
    ) {
        let bytes = JSONWriter.encode(.object(body))
        self.attempt(path, bytes, tried: 0, failures: [], done)
    }

    private func attempt(
        _ path: String, _ bytes: [UInt8], tried: Int, failures: [String],
        _ done: @escaping @MainActor (Result<JSONObject, EtcdError>) -> Void
    ) {
        guard tried < self.endpoints.count else {
            done(.failure(EtcdError(description: failures.joined(separator: "; "))))
            return
        }
        let index = (self.current + tried) % self.endpoints.count
        let endpoint = self.endpoints[index]
        var request: HTTPRequest?
        request = HTTPRequest.post(
            loop: self.loop, host: endpoint.host, port: endpoint.port, path: path, body: bytes,
            timeoutMilliseconds: self.timeoutMilliseconds, tls: endpoint.isTLS ? self.tls : nil
        ) { [weak self] result in
            guard let self else { return }
            self.inFlight.removeAll { $0 === request }
            var failure: String
            switch result {
            case .success(let response) where response.status == 200:
                if case .object(let object)? = try? JSONParser.parse(response.body) {
                    self.current = index
                    done(.success(object))
                    return
                }
                failure = "unreadable response"
            case .success(let response):
                failure = "HTTP \(response.status): \(String(decoding: response.body.prefix(200), as: UTF8.self))"
            case .failure(let error):
                failure = error.description
            }
            self.attempt(path, bytes, tried: tried + 1, failures: failures + ["\(endpoint): \(failure)"], done)
        }
        if let request { self.inFlight.append(request) }
    }

    // MARK: - Decoding

    /// A 64-bit number as the gateway writes it (a string), or as a plain number.
    static func int64(_ value: JSONValue?) -> Int64? {
        switch value {
        case .string(let text)?: return Int64(text)
        case .int(let number)?: return number
        default: return nil
        }
    }

    /// The first key-value of a range response as the leader record.
    private static func leaderRecord(in range: JSONObject) -> LeaderRecord? {
        guard case .array(let kvs)? = range["kvs"], case .object(let kv)? = kvs.first,
            case .string(let value)? = kv["value"], let bytes = Base64.decode(value),
            let revision = Self.int64(kv["create_revision"])
        else { return nil }
        return LeaderRecord(
            address: String(decoding: bytes, as: UTF8.self), term: UInt64(revision), lease: Self.int64(kv["lease"]) ?? 0)
    }
}

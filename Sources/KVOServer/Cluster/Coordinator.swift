// The seam between a cluster member and etcd: the calls the election makes (docs/SCALING.md#design), as a protocol,
// so the member runs against etcd (EtcdClient) in kvod and against an in-memory coordinator in the tests
// (Tests/KVOServerTests/InMemoryCoordinator.swift), where elections, leases, partitions and double failures run in
// process on a manual clock. Also the sync set's record (`/kvod/NAME/sync`), which says which members may lead.
import WireProtocol

/// The etcd calls of a cluster member. Every completion runs on the loop, once, unless `cancelAll` came first.
@MainActor
protocol Coordinator: AnyObject {
    /// Grants a lease of `seconds`; returns its id and TTL.
    func grantLease(seconds: Int, _ done: @escaping @MainActor (Result<(id: Int64, ttl: Int), EtcdError>) -> Void)
    /// Renews lease `id`; returns its TTL, 0 when the coordinator no longer has it (expired).
    func keepAlive(lease id: Int64, _ done: @escaping @MainActor (Result<Int, EtcdError>) -> Void)
    /// Creates `key` = `value` under `lease` if the key does not exist: `(true, record)` with the creating revision
    /// as the term when it did, else `(false, the current record)`.
    func createIfAbsent(
        key: String, value: String, lease: Int64,
        _ done: @escaping @MainActor (Result<(won: Bool, leader: LeaderRecord?), EtcdError>) -> Void)
    /// The record at `key` (value, creating revision, lease), nil when there is none.
    func read(key: String, _ done: @escaping @MainActor (Result<LeaderRecord?, EtcdError>) -> Void)
    /// Puts `key` = `value` under `lease`.
    func put(key: String, value: String, lease: Int64, _ done: @escaping @MainActor (Result<Void, EtcdError>) -> Void)
    /// Puts `key` = `value` (under no lease: it outlives its writer) only if `guardKey` exists and was created at
    /// revision `revision` (the writer still leads in that term); returns whether it did.
    func put(
        key: String, value: String, ifKey guardKey: String, createdAt revision: UInt64,
        _ done: @escaping @MainActor (Result<Bool, EtcdError>) -> Void)
    /// Every key under `prefix` with its value (as text).
    func read(prefix: String, _ done: @escaping @MainActor (Result<[(key: String, value: String)], EtcdError>) -> Void)
    /// Revokes lease `id`: every key attached to it is deleted at once.
    func revoke(lease id: Int64, _ done: @escaping @MainActor (Result<Void, EtcdError>) -> Void)
    /// Cancels every call in flight (their completions are not called).
    func cancelAll()
}

extension EtcdClient: Coordinator {}

/// The sync set (`/kvod/NAME/sync`, as Patroni's `/sync` key), written by a leader with `--sync-replicas N` before it
/// counts a follower's acks: `holders` are the leader and the followers whose acks count, and every acknowledged
/// mutation is on at least `min(N + 1, holders.count)` of them. So a candidate that sees `quorum` of them (published
/// positions under live leases, its own included) sees at least one holding every acknowledged mutation, and the
/// most advanced of those has them all. Only a holder may campaign, and only then.
struct SyncRecord: Equatable {
    /// The term of the leader that wrote it.
    var term: UInt64
    /// The leader that wrote it.
    var leader: String
    /// The leader and the followers whose acks it counts.
    var holders: [String]
    /// How many holders a candidate must see: holders − min(N + 1, holders) + 1.
    var quorum: Int

    /// The record for a leader and the followers whose acks count, under `--sync-replicas needed`.
    init(term: UInt64, leader: String, followers: [String], needed: Int) {
        self.term = term
        self.leader = leader
        self.holders = [leader] + followers.filter { $0 != leader }.sorted()
        let holding = min(max(needed, 0) + 1, self.holders.count)
        self.quorum = self.holders.count - holding + 1
    }

    /// `{"term":T,"leader":L,"holders":[...],"quorum":Q}`, as stored.
    var json: String {
        let value: JSONValue = .object([
            "term": .int(Int64(self.term)), "leader": .string(self.leader),
            "holders": .array(self.holders.map { .string($0) }), "quorum": .int(Int64(self.quorum)),
        ])
        return String(decoding: JSONWriter.encode(value), as: UTF8.self)
    }

    init?(json text: String) {
        guard case .object(let object)? = try? JSONParser.parse(Array(text.utf8)),
            case .int(let term)? = object["term"], term >= 0, case .string(let leader)? = object["leader"],
            case .array(let items)? = object["holders"], case .int(let quorum)? = object["quorum"], quorum >= 1
        else { return nil }
        var holders: [String] = []
        for item in items {
            guard case .string(let holder) = item else { return nil }
            holders.append(holder)
        }
        guard Int64(holders.count) >= quorum else { return nil }
        self.term = UInt64(term)
        self.leader = leader
        self.holders = holders
        self.quorum = Int(quorum)
    }
}

// A local mirror of a remote object: its keys' current values, kept up to date by one subscription per key, in an
// @Observable class, so SwiftUI views (or `withObservationTracking`) follow kvod as they follow local state.

public import Observation
public import WireProtocol

/// The keys of the object at a key path, mirrored live: `mirror["firstName"]` is kvod's current value, updated as
/// notifications arrive (and after a reconnection, by the resumed subscriptions). Observable on the main actor:
/// reading `values` (or a key) inside a SwiftUI body or `withObservationTracking` is tracked; any key's change
/// notifies (the values are one observable property).
@MainActor
@Observable
public final class KVOMirror {
    /// The key path of the mirrored object.
    public let path: String
    /// The mirrored keys' values (a key not read yet is absent).
    public private(set) var values: [String: JSONValue] = [:]
    /// The seq of the last change applied.
    public private(set) var seq: UInt64 = 0
    /// How many times the subscriptions had to resync (kvod could not replay what a reconnection missed; the values
    /// are the current ones again as soon as the initial notifications arrive).
    public private(set) var resyncs = 0

    @ObservationIgnored private var observations: [KVOObservation] = []

    /// The value of `key`, nil when not mirrored or not read yet.
    public subscript(key: String) -> JSONValue? {
        self.values[key]
    }

    private init(path: String) {
        self.path = path
    }

    /// Mirrors `keys` of the object at `path` (default: every key `describe` lists: the stored, declared and computed
    /// ones). Returns once every key is subscribed; the values arrive right after (initial notifications).
    public static func mirror(of path: String, keys: [String]? = nil, client: AsyncKVOClient) async throws -> KVOMirror {
        let mirror = KVOMirror(path: path)
        var names = keys ?? []
        if keys == nil {
            let description = try await client.describe(path)
            names = description["keys"]?.objectValue?.keys ?? []
            for name in description["class"]?["properties"]?.objectValue?.keys ?? [] where !names.contains(name) {
                names.append(name)
            }
        }
        for key in names {
            let keyPath = path.isEmpty ? key : "\(path).\(key)"
            let observation = try await client.observe(keyPath, options: [.new, .initial]) { [weak mirror] event in
                Task { @MainActor in mirror?.apply(event, to: key) }
            }
            mirror.observations.append(observation)
        }
        return mirror
    }

    private func apply(_ event: KVOEvent, to key: String) {
        switch event {
        case .change(let change):
            guard !change.isPrior, change.kind == .setting || change.isInitial else {
                // A collection mutation: the notification has the touched elements, not the whole value.
                return
            }
            if let value = change.new { self.values[key] = value }
            self.seq = max(self.seq, change.seq)
        case .resync:
            self.resyncs += 1
        }
    }

    /// Stops mirroring: every subscription ends.
    public func stop() {
        for observation in self.observations { observation.invalidate() }
        self.observations.removeAll()
    }
}

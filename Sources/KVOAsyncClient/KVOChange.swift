// What a subscription delivers: change notifications (README.md#notifications) and resyncs, as values; the options
// of `subscribe`; and the two ways to receive them: an AsyncSequence (`KVOChanges`) and an observation token
// (`KVOObservation`) that ends the subscription when released, as in the Lightweight Key-Value Observing pattern.

public import KVOClient
public import WireProtocol

/// What notifications carry (`subscribe`'s options, Protocol/methods.md#subscribe).
public enum KVOOption: String, Sendable, CaseIterable {
    /// The new value (or the inserted/replacing elements).
    case new
    /// The old value (or the removed/replaced elements).
    case old
    /// One notification right away with the current value (`isInitial`).
    case initial
    /// A notification before each change too (`isPrior`).
    case prior
}

/// The kind of a change, as NSKeyValueChange names it.
public enum KVOChangeKind: String, Sendable {
    case setting, insertion, removal, replacement
}

/// One change notification.
public struct KVOChange: Sendable, Equatable {
    /// The key path observed.
    public var path: String
    public var kind: KVOChangeKind
    /// The seq of the mutation (of the state read, for an initial notification).
    public var seq: UInt64
    /// With `.new`: the new value (for a collection mutation, the inserted or replacing elements); nil when not asked.
    public var new: JSONValue?
    /// With `.old`: the old value (the removed or replaced elements); nil when not asked.
    public var old: JSONValue?
    /// For a mutation of an ordered collection: the indexes it touched, sorted.
    public var indexes: [Int]?
    /// A notification sent before the change (option `.prior`); `new` is absent.
    public var isPrior: Bool
    /// The notification `.initial` asked for.
    public var isInitial: Bool
    /// The subscription's `context`, echoed.
    public var context: JSONValue?
}

/// What a subscription yields: a change, or, after a reconnection kvod could not replay (error 1010: it restarted, or
/// its history does not reach back to `since`), a resync: the changes between `since` and `seq` were missed. The
/// subscription goes on from `seq` (and, if it asked for `.initial`, the current value follows as an initial change).
public enum KVOEvent: Sendable, Equatable {
    case change(KVOChange)
    case resync(path: String, since: UInt64, oldest: UInt64?, seq: UInt64)

    /// The change, or nil for a resync.
    public var change: KVOChange? {
        if case .change(let change) = self { return change }
        return nil
    }
}

/// A subscription as an AsyncSequence of events: iterate it with `for try await`. It resumes by itself after a
/// reconnection (with `since`: no gap, no duplicate, or a `.resync` event). It ends — and kvod is told to unsubscribe
/// — when `cancel()` is called, or when iteration stops and the last copy of the sequence is released. Iteration
/// throws when kvod refuses to resume it (a token that no longer allows the path: `.server(error)`), or, for a client
/// made with `reconnect: false`, when the connection ends (`.closed`).
public struct KVOChanges: AsyncSequence, Sendable {
    public typealias Element = KVOEvent

    /// The key path observed.
    public let path: String
    let stream: AsyncThrowingStream<KVOEvent, any Error>
    let lifetime: SubscriptionLifetime

    public func makeAsyncIterator() -> Iterator {
        Iterator(base: self.stream.makeAsyncIterator(), lifetime: self.lifetime)
    }

    /// Ends the subscription (kvod unsubscribes it) and finishes the sequence.
    public func cancel() {
        self.lifetime.end()
    }

    /// Iterates the events; holds the subscription while it lives.
    public struct Iterator: AsyncIteratorProtocol {
        var base: AsyncThrowingStream<KVOEvent, any Error>.AsyncIterator
        let lifetime: SubscriptionLifetime

        public mutating func next() async throws -> KVOEvent? {
            try await self.base.next()
        }
    }
}

/// Ends a subscription once, when asked or when the last sequence or iterator holding it is released.
final class SubscriptionLifetime: Sendable {
    private let ending: @Sendable () -> Void

    init(_ ending: @escaping @Sendable () -> Void) {
        self.ending = ending
    }

    func end() {
        self.ending()
    }

    deinit {
        self.ending()
    }
}

/// An observation token, as `NSObject.observe(_:options:changeHandler:)` returns one: the subscription lives as long
/// as the token. Releasing it (or calling `invalidate()`) ends the subscription on kvod. The handler is called for
/// every event, in order, on a task of the client (not on the main actor).
public final class KVOObservation: Sendable {
    /// The key path observed.
    public let path: String
    private let changes: KVOChanges
    private let task: Task<Void, Never>

    init(changes: KVOChanges, handler: @escaping @Sendable (KVOEvent) -> Void) {
        self.path = changes.path
        self.changes = changes
        self.task = Task {
            do {
                for try await event in changes { handler(event) }
            } catch {
                // Ended by kvod (a resume it refused) or by the connection (reconnect: false): nothing more comes.
            }
        }
    }

    /// Ends the observation now; later events are not delivered. Calling it twice is harmless.
    public func invalidate() {
        self.task.cancel()
        self.changes.cancel()
    }

    deinit {
        self.invalidate()
    }
}

/// The errors the async client throws: KVOClient's, shared with the blocking client (`.server(RPCError)` for an error
/// response, with kvod's code; `.timeout`, `.closed`, `.connectionLost`, `.connectionFailed`).
public typealias KVOError = KVOClientError

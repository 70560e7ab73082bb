// The Swift API's lightweight observer (the seeds' observation-token pattern): `observe` returns a token, and the
// observation ends when the token is released or invalidated, so nobody has to remember to remove an observer.

/// Keeps an observation alive; releasing it (or calling `invalidate()`) removes the observation.
public final class ObservationToken {
    private weak var graph: Graph?
    private var observer: Observer?
    /// The observation's id.
    public let id: ObservationID

    init(graph: Graph, observer: Observer) {
        self.graph = graph
        self.observer = observer
        self.id = observer.id
    }

    /// Ends the observation now; idempotent.
    public func invalidate() {
        if let observer = self.observer {
            try? self.graph?.removeObservation(observer)  // already removed is fine: invalidate is idempotent
        }
        self.graph = nil
        self.observer = nil
    }

    deinit {
        self.invalidate()
    }
}

extension Graph {
    /// Observes `path` from Swift: `handler` gets every notification synchronously, inside the change, and with the
    /// `initial` option once right away. Keep the returned token as long as you want notifications.
    /// - Throws: `invalidPath`, or `undefinedKey` for a key a typed class on the path does not declare.
    public func observe(
        _ path: String, options: ObservationOptions = [.new], _ handler: @escaping (Change) -> Void
    ) throws(GraphError) -> ObservationToken {
        let sink = ClosureSink(handler)
        let (observer, initial) = try self.addObservation(KeyPath(parsing: path), options: options, sink: sink)
        sink.id = observer.id
        let token = ObservationToken(graph: self, observer: observer)
        if let initial { handler(initial) }
        return token
    }

    /// Convenience: the value at a dotted key path (`get(KeyPath(parsing:))`).
    public func get(_ path: String) throws(GraphError) -> Value {
        try self.get(KeyPath(parsing: path))
    }
}

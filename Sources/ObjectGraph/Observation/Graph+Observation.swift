// Adding and removing observations, and walking an observed key path to find its value and the (object, key)
// triggers it goes through. The walk is the one place that knows how a path reaches its value; commit
// (Graph+Commit.swift) calls it again after a change to re-target.

extension Graph {
    /// Observes `keyPath` with `options`; `handler` gets every notification, synchronously, inside the mutation that
    /// causes it. The path need not exist yet: a missing or null intermediate reads as null until it appears.
    /// - Returns: the observation's id, and with the `initial` option the initial notification, which the caller
    ///   delivers (so a server can send its response first).
    /// - Throws: `undefinedKey` when the path starts at an unknown `$id`.
    public func addObservation(
        _ keyPath: KeyPath, options: ObservationOptions, handler: @escaping (Change) -> Void
    ) throws(GraphError) -> (id: ObservationID, initial: Change?) {
        let sink = ClosureSink(handler)
        let added = try self.addObservation(keyPath, options: options, sink: sink)
        sink.id = added.observer.id
        return (added.observer.id, added.initial)
    }

    /// Observes `keyPath` with `options`; `sink` gets every notification, synchronously, inside the mutation that
    /// causes it (ObservationSink.swift). The graph keeps the sink until the observation is removed.
    /// - Returns: the observer (keep it to remove the observation), and with the `initial` option the initial
    ///   notification (shaped for `options`, with the id), which the caller delivers.
    /// - Throws: `undefinedKey` when the path starts at an unknown `$id`.
    public func addObservation(
        _ keyPath: KeyPath, options: ObservationOptions, sink: any ObservationSink
    ) throws(GraphError) -> (observer: Observer, initial: Change?) {
        try self.checkObservable(keyPath)
        let registry = self.registry
        let path: ObservedPath
        if let existing = registry.paths[keyPath] {
            path = existing
        } else {
            path = ObservedPath(keyPath: keyPath)
            var triggers: [Touch: TriggerRole] = [:]
            _ = self.walk(keyPath, triggers: &triggers)
            registry.setTriggers(triggers, for: path)
            registry.paths[keyPath] = path
        }
        let id = registry.nextObservationID
        registry.nextObservationID += 1
        let observer = Observer(id: id, options: options, path: path, sink: sink)
        path.observerAdded(observer)
        registry.observerCount += 1

        guard options.contains(.initial) else { return (observer, nil) }
        let initial = Change(
            observation: id, kind: .setting, isPrior: false, isInitial: true,
            new: options.contains(.new) ? self.export(self.resolve(keyPath)) : nil, old: nil, indexes: nil,
            seq: self.seq, payloadID: registry.nextPayloadID())
        return (observer, initial)
    }

    /// Removes an observation; it is not notified again, even by a notification round already under way.
    /// - Throws: `unknownObservation` when the id is not (or no longer) registered.
    public func removeObservation(_ id: ObservationID) throws(GraphError) {
        guard let observer = self.registry.observer(id) else { throw GraphError.unknownObservation(id) }
        try self.removeObservation(observer)
    }

    /// Removes the observation `observer` stands for (no search: what a server holding many does).
    /// - Throws: `unknownObservation` when it was already removed.
    public func removeObservation(_ observer: Observer) throws(GraphError) {
        guard observer.isActive else { throw GraphError.unknownObservation(observer.id) }
        observer.isActive = false
        self.registry.observerCount -= 1
        let path = observer.path
        _ = path.observerRemoved(observer)
        if path.observers.isEmpty { self.registry.dropPath(path) }
    }

    /// The number of live observations.
    public var observationCount: Int { self.registry.observerCount }

    /// The key path and options of a live observation, or nil.
    public func observation(_ id: ObservationID) -> (keyPath: KeyPath, options: ObservationOptions)? {
        guard let observer = self.registry.observer(id) else { return nil }
        return (observer.path.keyPath, observer.options)
    }

    // MARK: - Walking observed paths

    /// Checks a path an observation is about to follow, on its current route: a key a typed class does not declare
    /// (also behind a to-many relationship) or an unknown collection operator is `undefinedKey`, `@sum`/`@avg` over
    /// values that are not numbers `typeMismatch`. Open classes, missing, null and scalar values are not checked: the
    /// path may come alive later.
    public func checkObservable(_ keyPath: KeyPath) throws(GraphError) {
        guard self.objects[keyPath.origin] != nil else {
            throw GraphError.undefinedKey(path: keyPath.prefixDescription(0))
        }
        _ = try self.evaluate(keyPath.keys[...], from: .object(keyPath.origin), strict: keyPath, scalarsAreErrors: false)
    }
}

// `subscribe` and `unsubscribe`: key-value observing over the wire (Protocol/methods.md#subscribe,
// #unsubscribe). Subscriptions are indexed both ways: the engine knows the path, the connection knows its ids.
import ObjectGraph
import WireProtocol

extension Dispatcher {
    func subscribe(_ request: RPCRequest, on session: Session) throws {
        let params = Params(
            request.params, names: ["path", "options", "context", "since", "progress", "query"], method: "subscribe")
        try params.rejectUnknown()
        let text = try params.string("path")
        let path = try self.keyPath(text)
        let query = try params["query"].map { (value) throws(RPCError) in try QueryParams.parse(value, method: "subscribe") }
        let options = try Self.observationOptions(params["options"])
        let context = params["context"]
        if let context { try self.checkContextLimit(context) }
        let graph = self.context.graph
        let progress = try params["progress"].map { _ in try params.integer("progress") }
        if let progress, progress < 1 || progress > 86_400 {
            throw RPCError.badParams("subscribe: 'progress' must be a number of seconds from 1 to 86400")
        }
        // Resuming: what this subscription would have received after `since`, or 1010 when the history cannot say.
        var missed: [Change] = []
        if params["since"] != nil {
            let since = try params.integer("since")
            if options.contains(.initial) {
                throw RPCError.badParams("subscribe: 'since' and the 'initial' option exclude each other")
            }
            try self.refuseLostSince(since, path: text, keyPath: path)
            if let query {
                try self.context.graph.checkQueryObservable(path, query)
                missed = try self.context.subscriptions.missed(path, query: query, spelled: text, since: since)
            } else {
                missed = try self.context.subscriptions.missed(path, spelled: text, since: since)
            }
        }
        // A query whose answer takes more than a bounded evaluation is filled over the next turns; this request
        // waits for it (Protocol/README.md#fairness).
        if let query {
            session.noteCostlyRequest()
            if try !graph.prepareQueryObservation(path, query: query) { throw RequestWaits() }
        }
        let (created, initial) = try self.context.subscriptions.create(
            path: text, keyPath: path, query: query, options: options, context: context,
            progressSeconds: progress.map { Int($0) }, for: session, encoder: self.context.encoder)
        let id = created.id
        let seq = graph.seq
        self.writeResult {
            $0.append(contentsOf: #"{"subscription":"#.utf8)
            JSONWriter.appendInt(Int64(id), to: &$0)
            $0.append(contentsOf: #","seq":"#.utf8)
            JSONWriter.appendInt(Int64(seq), to: &$0)
            $0.append(UInt8(ascii: "}"))
        }
        if let initial { self.deferInitial(initial, for: created) }
        for change in missed where options.contains(.prior) || !change.isPrior {
            // The history kept every field; delivery sends only what this subscription's options ask for.
            self.deferInitial(change, for: created)
        }
    }

    func unsubscribe(_ request: RPCRequest, on session: Session) throws {
        let params = Params(request.params, names: ["subscription"], method: "unsubscribe")
        try params.rejectUnknown()
        let id = try params.integer("subscription")
        // Another connection's subscription is as unknown as one that never existed.
        guard let wireID = Int(exactly: id), session.removeSubscription(wireID) else {
            throw RPCError(
                .unknownSubscription, "unknown subscription \(id)", data: .object(["subscription": .int(id)]))
        }
        self.writeResult { $0.append(contentsOf: "true".utf8) }
    }

    /// Parses `["new","old","initial","prior"]`; absent means none.
    static func observationOptions(_ value: JSONValue?) throws(RPCError) -> ObservationOptions {
        guard let value else { return [] }
        guard case .array(let names) = value else {
            throw RPCError.badParams("subscribe: 'options' must be an array of \"new\", \"old\", \"initial\", \"prior\"")
        }
        var options = ObservationOptions()
        for name in names {
            switch name {
            case .string("new"): options.insert(.new)
            case .string("old"): options.insert(.old)
            case .string("initial"): options.insert(.initial)
            case .string("prior"): options.insert(.prior)
            default:
                throw RPCError.badParams("subscribe: unknown option \(JSONWriter.encodeString(name))")
            }
        }
        return options
    }

    /// `subscribe` with `since` beyond this member's seq, where no history can hold those seqs: on a single node they
    /// were lost (acknowledged under `--fsync everysec` or `no`, then a crash; or the client saw another data
    /// directory), and on a cluster leader that can prove its lease they were acknowledged by a previous leader and
    /// lost in an asynchronous failover (docs/SCALING.md#clients). Either way the client must resync: 1010 with
    /// `data.oldest`, not the "behind" refusal a client retries until the seq passes `since` and the resume would
    /// skip the changes at seqs it saw before. A follower may only be behind: nothing is decided here.
    func refuseLostSince(_ since: Int64, path text: String, keyPath: KeyPath) throws {
        let seq = self.context.graph.seq
        guard since > Int64(seq) else { return }
        if let cluster = self.context.cluster, !cluster.acceptsWrites(now: self.context.clock.nowMilliseconds) {
            return
        }
        try self.context.graph.checkObservable(keyPath)  // a bad path's error first
        let history = self.context.subscriptions.history
        let oldest = history.isEnabled ? history.oldestResumable(keyPath) : seq
        let whose = self.context.cluster == nil ? "kvod's" : "the leader's"
        throw RPCError(
            .resyncRequired, "cannot resume \(text) from seq \(since): \(whose) history ends at \(seq)",
            data: .object([
                "path": .string(text), "since": .int(since), "oldest": .int(Int64(oldest)), "seq": .int(Int64(seq)),
            ]))
    }
}

// `subscribe` and `unsubscribe`: key-value observing over the wire (Protocol/methods.md#subscribe,
// #unsubscribe). Subscriptions are indexed both ways: the engine knows the path, the connection knows its ids.
import ObjectGraph
import WireProtocol

extension Dispatcher {
    func subscribe(_ request: RPCRequest, on connection: Connection) throws {
        self.server.countRequest(isMutation: false)
        let params = Params(
            request.params, names: ["path", "options", "context", "since", "progress"], method: "subscribe")
        try params.rejectUnknown()
        let text = try params.string("path")
        let path = try self.keyPath(text)
        let options = try Self.observationOptions(params["options"])
        let context = params["context"]
        let graph = self.server.graph
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
            guard since >= 0, UInt64(since) <= graph.seq else {
                throw RPCError.badParams("subscribe: 'since' must be a seq from 0 to the current \(graph.seq)")
            }
            try graph.checkObservable(path)
            if UInt64(since) < graph.seq {
                guard self.server.history.isEnabled, let changes = self.server.history.changes(for: path, after: UInt64(since)) else {
                    let oldest = self.server.history.isEnabled ? self.server.history.oldestResumable(path) : graph.seq
                    throw RPCError(
                        .resyncRequired, "cannot resume \(text) from seq \(since): the history starts at \(oldest)",
                        data: .object(["path": .string(text), "since": .int(since), "oldest": .int(Int64(oldest)), "seq": .int(Int64(graph.seq))]))
                }
                missed = changes
            }
        }
        let id = self.server.nextSubscriptionID
        let created = Subscription(
            id: id, path: text, keyPath: path, options: options, context: context, connection: connection)
        let (observer, initial) = try graph.addObservation(path, options: options, sink: created)
        self.server.nextSubscriptionID += 1
        created.observer = observer
        connection.add(created)
        self.server.history.subscribed(path)
        if let progress { try self.server.startProgress(created, seconds: Int(progress)) }
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

    func unsubscribe(_ request: RPCRequest, on connection: Connection) throws {
        self.server.countRequest(isMutation: false)
        let params = Params(request.params, names: ["subscription"], method: "unsubscribe")
        try params.rejectUnknown()
        let id = try params.integer("subscription")
        // Another connection's subscription is as unknown as one that never existed.
        guard let wireID = Int(exactly: id), connection.removeSubscription(wireID) else {
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
}

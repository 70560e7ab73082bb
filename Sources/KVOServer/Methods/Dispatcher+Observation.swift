// `subscribe` and `unsubscribe`: key-value observing over the wire (Protocol/methods.md#subscribe,
// #unsubscribe). Subscriptions are indexed both ways: the engine knows the path, the connection knows its ids.
import ObjectGraph
import WireProtocol

extension Dispatcher {
    func subscribe(_ request: RPCRequest, on connection: Connection) throws {
        self.server.countRequest(isMutation: false)
        let params = Params(request.params, names: ["path", "options", "context"], method: "subscribe")
        try params.rejectUnknown()
        let text = try params.string("path")
        let path = try KeyPath(parsing: text)
        let options = try Self.observationOptions(params["options"])
        let context = params["context"]
        let graph = self.server.graph
        var subscription: Subscription?
        let (id, initial) = try graph.addObservation(path, options: options) { change in
            subscription?.deliver(change)
        }
        let created = Subscription(
            id: id, path: text, keyPath: path, options: options, context: context, connection: connection)
        subscription = created
        connection.add(created)
        let seq = graph.seq
        self.writeResult {
            $0.append(contentsOf: #"{"subscription":"#.utf8)
            JSONWriter.appendInt(Int64(id), to: &$0)
            $0.append(contentsOf: #","seq":"#.utf8)
            JSONWriter.appendInt(Int64(seq), to: &$0)
            $0.append(UInt8(ascii: "}"))
        }
        if let initial { self.deferInitial(initial, for: created) }
    }

    func unsubscribe(_ request: RPCRequest, on connection: Connection) throws {
        self.server.countRequest(isMutation: false)
        let params = Params(request.params, names: ["subscription"], method: "unsubscribe")
        try params.rejectUnknown()
        let id = try params.integer("subscription")
        // Another connection's subscription is as unknown as one that never existed.
        guard let observationID = ObservationID(exactly: id), connection.removeSubscription(observationID) else {
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

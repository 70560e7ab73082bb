// `onDisconnect`: operations that run as one transaction when the session ends, for whatever reason (Firebase's
// onDisconnect, a ZooKeeper ephemeral node); with `set`'s `ttl` (Dispatcher+KeyValueCoding.swift) the presence
// pattern of Protocol/methods.md#ondisconnect. Registrations reach the journal through the session's mutation log
// (OnDisconnectRecord.swift), so a crash does not lose them. In a cluster only the leader takes registrations
// (followers answer 1012), ships them to its followers, and the next leader runs those of its connections
// (ClusterLog, docs/SCALING.md#presence-across-a-failover).
import ObjectGraph
import WireProtocol

extension Dispatcher {
    func onDisconnect(_ request: RPCRequest, on session: Session) throws {
        let params = Params(request.params, names: ["ops"], method: "onDisconnect")
        try params.rejectUnknown()
        guard case .array(let items)? = params["ops"] else {
            throw RPCError.badParams("onDisconnect: 'ops' must be an array of {method, params} (empty: cancel)")
        }
        let limit = self.context.limits.maxTransactionOps
        if items.count > limit {
            throw RPCError(
                .limitExceeded, "onDisconnect of \(items.count) ops exceeds \(limit)",
                data: .object(["limit": .int(Int64(limit))]))
        }
        // Shapes and paths are checked now; the values are checked against the graph when the ops run.
        let resolved = try MutationRequest.resolvingTTLs(
            inTransaction: .object(["ops": .array(items)]),
            nowEpochMilliseconds: self.context.clock.epochMilliseconds)
        if case .object(let object)? = resolved, case .array(let ops)? = object["ops"] {
            for (index, op) in ops.enumerated() {
                do {
                    _ = try MutationRequest.parseOp(op)
                } catch let error as any RPCErrorConvertible {
                    throw Self.opError(error.rpcError, index: index)
                }
            }
        }
        let changes = self.context.replication?.registrationNumber
        session.registerOnDisconnect(items)
        // A change was shipped: with --sync-replicas the response waits until followers have it, as a mutation's.
        if let source = self.context.replication, source.registrationNumber != changes {
            source.holdRegistrationResponse(of: session)
        }
        self.writeResult {
            $0.append(contentsOf: #"{"ops":"#.utf8)
            JSONWriter.appendInt(Int64(items.count), to: &$0)
            $0.append(UInt8(ascii: "}"))
        }
    }

    /// Runs the `onDisconnect` ops of an ended connection (`connection` its `durableID`; `logID` names it in logs)
    /// as one transaction (a `ttl` counts from now): the mutation log first hears that the connection ended, then
    /// gets the transaction it is. A failure (validation, a precondition) changes nothing; it is logged and counted.
    /// A cluster member that cannot write (a follower, a leader whose lease is not proven) does not run them: they
    /// stay registered, for this member if it leads, else for the leader that holds them from the stream
    /// (docs/SCALING.md#presence-across-a-failover).
    func runOnDisconnect(_ ops: [JSONValue], connection: String, logID: String) {
        let context = self.context
        if let cluster = context.cluster, !cluster.acceptsWrites(now: context.clock.nowMilliseconds) {
            (context.mutationLog as? ClusterLog)?.orphaned(connection: connection, ops: ops)
            context.logger.info(
                "onDisconnect ops not run: this member cannot write; the leader runs them",
                metadata: ["connection.id": "\(logID)", "cluster.role": "\(cluster.role.rawValue)"])
            return
        }
        context.mutationLog?.disconnected(connection: connection)
        do {
            let resolved = try MutationRequest.resolvingTTLs(
                inTransaction: .object(["ops": .array(ops)]), nowEpochMilliseconds: context.clock.epochMilliseconds)
            guard case .object(let object)? = resolved, case .array(let items)? = object["ops"] else { return }
            let seq = try context.graph.transaction(items.map(MutationRequest.parseOp))
            context.stats.mutations += 1
            context.mutationLog?.committed(seq: seq, method: "transaction", params: resolved)
        } catch {
            context.stats.onDisconnectFailures += 1
            let rpc = (error as? any RPCErrorConvertible)?.rpcError.message ?? "\(error)"
            context.logger.warning(
                "onDisconnect ops failed: nothing applied",
                metadata: ["connection.id": "\(logID)", "error": "\(rpc)"])
        }
    }

    /// An op's error with `data.op` its index.
    static func opError(_ error: RPCError, index: Int) -> RPCError {
        var rpc = error
        var data: JSONObject
        if case .object(let object)? = rpc.data { data = object } else { data = JSONObject() }
        data["op"] = .int(Int64(index))
        rpc.data = .object(data)
        rpc.message = "op \(index): \(rpc.message)"
        return rpc
    }
}

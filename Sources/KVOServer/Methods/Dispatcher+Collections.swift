// To-many mutations and transactions over the wire (Protocol/methods.md#insert ... #transaction): `insert`,
// `remove`, `replace` by index (or by value for sets), the set mutations `union`, `minus`, `intersect`,
// `setMembers`, and `transaction`, which applies many of them (and `set`s) atomically with one seq.
import ObjectGraph
import ValueCoding
import WireProtocol

extension Dispatcher {
    func collectionMutation(_ request: RPCRequest, on session: Session) throws {
        let (path, mutation, condition) = try MutationRequest.parseMutation(method: request.method, request.params)
        let result = try self.context.graph.mutate(path, mutation, if: condition)
        self.committed(result.seq)
        self.writeSeq(result.seq)
    }

    func transaction(_ request: RPCRequest, on session: Session) throws {
        // Every set op's `ttl` becomes an absolute `expiresAt`, which is what is applied and journaled.
        let resolved = try MutationRequest.resolvingTTLs(
            inTransaction: request.params, nowEpochMilliseconds: self.context.clock.epochMilliseconds)
        let params = Params(resolved, names: ["ops"], method: "transaction")
        try params.rejectUnknown()
        guard case .array(let items)? = params["ops"], !items.isEmpty else {
            throw RPCError.badParams("transaction: 'ops' must be a non-empty array of {method, params}")
        }
        if items.count > self.context.limits.maxTransactionOps {
            let limit = self.context.limits.maxTransactionOps
            throw RPCError(.limitExceeded, "transaction of \(items.count) ops exceeds \(limit)", data: .object(["limit": .int(Int64(limit))]))
        }
        var ops: [TransactionOp] = []
        for (index, item) in items.enumerated() {
            do {
                ops.append(try MutationRequest.parseOp(item))
            } catch let error as any RPCErrorConvertible {
                // An op that cannot be read fails the transaction, unless an earlier op would fail first.
                try self.context.graph.validateTransaction(ops)
                throw Self.opError(error.rpcError, index: index)
            }
        }
        let seq = try self.context.graph.transaction(ops)
        self.committed(seq, params: resolved == request.params ? nil : resolved)
        self.writeSeq(seq)
    }

    private func writeSeq(_ seq: UInt64) {
        self.writeResult {
            $0.append(contentsOf: #"{"seq":"#.utf8)
            JSONWriter.appendInt(Int64(seq), to: &$0)
            $0.append(UInt8(ascii: "}"))
        }
    }
}

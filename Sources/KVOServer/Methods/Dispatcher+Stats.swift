// `stats`: the server's figures over the protocol (Protocol/methods.md#stats), the same snapshot the metrics
// endpoint renders (StatsSnapshot.swift).
import WireProtocol

extension Dispatcher {
    func stats(_ request: RPCRequest, on session: Session) throws {
        try Params(request.params, names: [], method: "stats").rejectUnknown()
        let snapshot = self.context.statsSnapshot()
        self.writeResult { JSONWriter.append(snapshot.json, to: &$0) }
    }
}

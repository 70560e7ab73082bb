// `stats`: the server's figures over the protocol (Protocol/methods.md#stats), the same snapshot the metrics
// endpoint renders (StatsSnapshot.swift).
import WireProtocol

extension Dispatcher {
    func stats(_ request: RPCRequest, on connection: Connection) throws {
        self.server.countRequest(isMutation: false)
        try Params(request.params, names: [], method: "stats").rejectUnknown()
        let snapshot = self.server.statsSnapshot()
        self.writeResult { JSONWriter.append(snapshot.json, to: &$0) }
    }
}

// One reader for `set`'s params (MutationRequest.parseSet) serves a `set` request, a transaction's set op and journal
// replay: the same params must be taken or refused alike by each, with the same -32602 message.
@testable import KVOServer
import ObjectGraph
import Testing
import WireProtocol

@MainActor
@Suite struct SetParamsTests {
    /// Params by name, in another order, by position; conditions, an expiry; then every way to get them wrong.
    static let params: [String] = [
        #"{"path":"a","value":1}"#, #"{"value":2,"path":"a"}"#, #"["a",3]"#, #"{"path":"b.c","value":{"d":[1]}}"#,
        #"{"path":"n","value":5,"if":{"absent":true}}"#, #"{"path":"a","value":6,"expiresAt":1800000000000}"#,
        #"["b.e",7,{"modSeq":0},null]"#, #"{"path":"a","value":8,"if":{"absent":true}}"#,
        #"{"path":"a","value":9,"force":true}"#, #"{"path":"a"}"#, #"{"path":1,"value":1}"#, #"{"value":1}"#,
        #"{"path":"a","value":1,"if":3}"#, #"{"path":"a","value":1,"if":{"absent":false}}"#,
        #"{"path":"a","value":1,"expiresAt":-1}"#, #"["a",1,null,null,5]"#,
    ]

    @Test func requestsAndTransactionOpsReadSetParamsAlike() throws {
        let direct = InProcessServer()
        let inTransaction = InProcessServer()
        let (_, directPeer) = direct.connect()
        let (_, transactionPeer) = inTransaction.connect()
        var refusals = 0
        for (index, params) in Self.params.enumerated() {
            let set = try #require(try direct.request(directPeer, index, "set", params).first)
            let ops = #"{"ops":[{"method":"set","params":\#(params)}]}"#
            let transaction = try #require(try inTransaction.request(transactionPeer, index, "transaction", ops).first)
            #expect(set["result"]?["seq"] == transaction["result"]?["seq"], "\(params): \(set) / \(transaction)")
            #expect(set["error"]?["code"] == transaction["error"]?["code"], "\(params): \(set) / \(transaction)")
            if set["error"]?["code"] == -32602, case .string(let message)? = set["error"]?["message"] {
                refusals += 1
                #expect(transaction["error"]?["message"] == .string("op 0: " + message), "\(params)")
            }
        }
        // Not vacuous: seven applied (one seq each, alike), eight refused by the reader, one by its condition.
        #expect(direct.graph.seq == 7 && inTransaction.graph.seq == 7)
        #expect(refusals == 8)
        // What the requests journaled replays through the same reader into the same graph.
        let replayed = Graph(model: .open)
        for record in direct.log.records {
            try MutationRequest.replay(method: record.method, params: record.params, into: replayed)
        }
        for path in ["a", "b", "n"] {
            #expect(try replayed.get(path) == direct.graph.get(path))
            #expect(try inTransaction.graph.get(path) == direct.graph.get(path))
        }
    }
}

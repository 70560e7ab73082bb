// The engine's edges as a client meets them (issue 23): a sum no double can hold is null at `get`, in notifications
// and after a restart on the saved graph (it once trapped the server, and with --data-dir every restart again: a
// poison pill); large collections change at an index and keep sets sorted across a restart.
import Foundation
import TestSupport
import Testing
import WireProtocol

@Suite(.serialized) struct EngineEdgesOverWireTests {
    static let max = "1.7976931348623157e308"

    @Test func aSumBeyondADoubleIsNullAndTheSavedGraphStillLoads() throws {
        let directory = DurabilityTests.scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let arguments = ["--data-dir", directory, "--snapshot-every", "3"]
        do {
            let server = try KVODProcess.start(arguments, defaultModel: true)
            let peer = try Peer(server)
            let sum = try peer.request(1, "subscribe", #"{"path":"nums.@sum.self","options":["new"]}"#)
            let total = try peer.request(2, "subscribe", #"{"path":"department.totalSalary","options":["new"]}"#)
            // Notifications come before the response.
            let change = try peer.request(3, "set", #"{"path":"nums","value":[\#(Self.max),\#(Self.max)]}"#)
            #expect(change["params"]?["subscription"] == sum["result"]?["subscription"])
            #expect(change["params"]?["new"] == .null)
            #expect(try peer.receive()["result"]?["seq"] == 1)
            let salary = try peer.request(
                4, "insert",
                #"{"path":"department.employees","values":[{"name":"A","salary":\#(Self.max)},{"name":"B","salary":\#(Self.max)}]}"#)
            #expect(salary["params"]?["subscription"] == total["result"]?["subscription"] && salary["params"]?["new"] == .null)
            #expect(try peer.receive()["result"]?["seq"] == 2)
            #expect(try peer.request(5, "get", #"{"path":"nums.@sum.self"}"#)["result"]?["value"] == .null)
            #expect(try peer.request(6, "get", #"{"path":"nums.@avg.self"}"#)["result"]?["value"] == .double(.greatestFiniteMagnitude))
            #expect(try peer.request(7, "get", #"{"path":"department.totalSalary"}"#)["result"]?["value"] == .null)
            #expect(server.stop() == 0)
        }
        // The graph on disk loads, and reads the same.
        let server = try KVODProcess.start(arguments, defaultModel: true)
        let peer = try Peer(server)
        #expect(try peer.request(1, "get", #"{"path":"nums.@sum.self"}"#)["result"]?["value"] == .null)
        #expect(try peer.request(2, "get", #"{"path":"department.totalSalary"}"#)["result"]?["value"] == .null)
        #expect(try peer.request(3, "get", #"{"path":"department.employees.@max.salary"}"#)["result"]?["value"] == .double(.greatestFiniteMagnitude))
        #expect(try peer.request(4, "ping")["result"] == "pong")
    }

    @Test func aLargeArrayChangesAtAnIndexAndASetStaysSortedAcrossARestart() throws {
        let directory = DurabilityTests.scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let arguments = ["--data-dir", directory, "--snapshot-every", "5"]
        let count = 200_000
        do {
            let server = try KVODProcess.start(arguments, defaultModel: true)
            let peer = try Peer(server)
            for start in stride(from: 0, to: count, by: 50_000) {
                let values = (start..<(start + 50_000)).map(String.init).joined(separator: ",")
                #expect(try peer.request(start, "insert", #"{"path":"list","values":[\#(values)]}"#)["result"] != nil)
            }
            let watch = try peer.request(1, "subscribe", #"{"path":"list","options":["new","old"]}"#)
            let change = try peer.request(2, "replace", #"{"path":"list","index":123456,"value":"x"}"#)
            #expect(try peer.receive()["result"] != nil)
            #expect(change["params"]?["subscription"] == watch["result"]?["subscription"])
            #expect(change["params"]?["kind"] == "replacement" && change["params"]?["indexes"] == [123456])
            #expect(change["params"]?["old"] == [123456] && change["params"]?["new"] == ["x"])
            #expect(try peer.request(3, "remove", #"{"path":"list","indexes":[0,199999]}"#)["params"]?["kind"] == "removal")
            #expect(try peer.receive()["result"] != nil)
            #expect(try peer.request(4, "union", #"{"path":"department.tags","values":["pear","apple","fig"]}"#)["result"] != nil)
            #expect(try peer.request(5, "minus", #"{"path":"department.tags","values":["fig"]}"#)["result"] != nil)
            #expect(server.stop() == 0)
        }
        let server = try KVODProcess.start(arguments, defaultModel: true)
        let peer = try Peer(server)
        #expect(try peer.request(1, "get", #"{"path":"list.@count"}"#)["result"]?["value"] == .int(Int64(count - 2)))
        #expect(try peer.request(2, "get", #"{"path":"list.@max.self"}"#)["result"]?["value"] == 199998)
        #expect(try peer.request(3, "get", #"{"path":"department.tags"}"#)["result"]?["value"] == ["apple", "pear"])
        #expect(try peer.request(4, "union", #"{"path":"department.tags","values":["banana"]}"#)["result"] != nil)
        #expect(try peer.request(5, "get", #"{"path":"department.tags"}"#)["result"]?["value"] == ["apple", "banana", "pear"])
    }
}

// `kvoctl watch` as a background process against a live kvod: notifications caused by concurrent `kvoctl set`s, the
// initial notification, the option flags, context, --count, --timeout, and a server that goes away.

import TestSupport
import Testing
import WireProtocol

@Suite("kvoctl watch")
struct WatchTests {
    @Test func printsNotificationsCausedByConcurrentSets() throws {
        try withKVOD { server in
            #expect(try CLI.run(["set", "city", "Lisbon"], on: server).status == 0)
            let watch = try CLI.start(["watch", "city", "--old", "--new", "--count", "2"], on: server)
            try waitForSubscription(on: server, path: "city")
            let first = try parseJSON(try CLI.run(["set", "city", "Porto"], on: server).stdout)
            let second = try parseJSON(try CLI.run(["set", "city", #"{"name":"Faro"}"#], on: server).stdout)

            let result = try watch.waitForExit(timeout: .seconds(10))
            #expect(result.status == 0, "\(result)")
            let lines = try result.stdoutLines.map { try parseJSON($0) }
            try #require(lines.count == 2, "\(result)")
            #expect(lines[0]["path"] == "city")
            #expect(lines[0]["kind"] == "setting")
            #expect(lines[0]["old"] == "Lisbon")
            #expect(lines[0]["new"] == "Porto")
            #expect(lines[0]["seq"] == first["seq"])
            #expect(lines[0]["prior"] == nil && lines[0]["initial"] == nil)
            #expect(lines[1]["old"] == "Porto")
            #expect(lines[1]["new"].map(withoutObjectIDs) == .json(#"{"name":"Faro"}"#))
            #expect(lines[1]["seq"] == second["seq"])
            #expect(lines[0]["subscription"] != nil && lines[0]["subscription"] == lines[1]["subscription"])
        }
    }

    @Test func withoutOptionFlagsNotificationsCarryOnlyNew() throws {
        try withKVOD { server in
            #expect(try CLI.run(["set", "n", "1"], on: server).status == 0)
            let watch = try CLI.start(["watch", "n", "--count", "1"], on: server)
            try waitForSubscription(on: server, path: "n")
            #expect(try CLI.run(["set", "n", "2"], on: server).status == 0)
            let result = try watch.waitForExit(timeout: .seconds(10))
            #expect(result.status == 0, "\(result)")
            let line = try parseJSON(result.stdout)
            #expect(line["new"] == 2)
            #expect(line["old"] == nil, "old was not asked for: \(line)")
        }
    }

    @Test func initialWithNewPrintsTheCurrentValueAndExits() throws {
        try withKVOD { server in
            let set = try parseJSON(try CLI.run(["set", "person.name", "Ann"], on: server).stdout)
            let result = try CLI.run(["watch", "person.name", "--initial", "--new", "--count", "1"], on: server)
            #expect(result.status == 0, "\(result)")
            try #require(result.stdoutLines.count == 1, "\(result)")
            let line = try parseJSON(result.stdout)
            #expect(line["initial"] == true)
            #expect(line["new"] == "Ann")
            #expect(line["old"] == nil)
            #expect(line["seq"] == set["seq"])
            #expect(line["path"] == "person.name")
        }
    }

    @Test func initialAloneCarriesNoValue() throws {
        try withKVOD { server in
            #expect(try CLI.run(["set", "k", "5"], on: server).status == 0)
            let result = try CLI.run(["watch", "k", "--initial", "--count", "1"], on: server)
            #expect(result.status == 0, "\(result)")
            let line = try parseJSON(result.stdout)
            #expect(line["initial"] == true)
            #expect(line["new"] == nil && line["old"] == nil, "\(line)")
        }
    }

    @Test func priorAndContextAreReported() throws {
        try withKVOD { server in
            let watch = try CLI.start(
                ["watch", "v", "--prior", "--old", "--new", "--context", #"{"tag":[1,"x"]}"#, "--count", "2"],
                on: server)
            try waitForSubscription(on: server, path: "v")
            #expect(try CLI.run(["set", "v", "7"], on: server).status == 0)
            let result = try watch.waitForExit(timeout: .seconds(10))
            #expect(result.status == 0, "\(result)")
            let lines = try result.stdoutLines.map { try parseJSON($0) }
            try #require(lines.count == 2, "\(result)")
            #expect(lines[0]["prior"] == true)
            #expect(lines[0]["old"] == .null)
            #expect(lines[0]["new"] == nil)
            #expect(lines[1]["prior"] == nil)
            #expect(lines[1]["new"] == 7)
            #expect(lines.allSatisfy { $0["context"] == .json(#"{"tag":[1,"x"]}"#) })
            #expect(lines[0]["seq"] == lines[1]["seq"])
        }
    }

    @Test func explicitTimeoutEndsAQuietWatchWithStatus4() throws {
        try withKVOD { server in
            let result = try CLI.run(["watch", "quiet", "--timeout", "0.3"], on: server)
            #expect(result.status == 4, "\(result)")
            #expect(result.stderr.hasPrefix("kvoctl: timed out"), "\(result)")
        }
    }

    @Test func serverGoingAwayForGoodEndsTheWatchWithStatus3() throws {
        let server = try KVODProcess.start()
        defer { server.stop() }
        let watch = try CLI.start(["watch", "anything", "--failover-wait", "1"], on: server)
        try waitForSubscription(on: server, path: "anything")
        server.stop()
        let result = try watch.waitForExit(timeout: .seconds(10))
        #expect(result.status == 3, "\(result)")
        #expect(
            result.stderr.contains("connection to \(server.host):\(server.port) lost; waiting up to 1 s for kvod to come back"),
            "\(result)")
        #expect(result.stderr.contains("kvoctl: cannot connect to \(server.host):\(server.port)"), "\(result)")
    }
}

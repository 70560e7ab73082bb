// kvoctl given several addresses (MemberAddress.swift, MemberClient.swift): `--host`/`--connect`/`$KVOD_HOST` lists,
// the first address that accepts wins, every address refusing is exit 3 naming each, a bad list is a usage error
// (64); and `kvoctl cluster` against a kvod outside any cluster and an unreachable address. Following the leader of a
// real cluster is Tests/cluster/clients_test.py.

import TestSupport
import Testing
import WireProtocol

@Suite("kvoctl address lists and kvoctl cluster")
struct AddressListTests {
    /// A loopback port nothing listens on (a kvod's, after it stopped).
    static func closedPort() throws -> Int {
        let server = try KVODProcess.start()
        let port = server.port
        server.stop()
        return port
    }

    @Test func theFirstAddressThatAcceptsIsUsed() throws {
        let dead = try Self.closedPort()
        try withKVOD { server in
            let list = "127.0.0.1:\(dead),\(server.host):\(server.port)"
            let set = try CLI.run(["set", "a", "5", "--host", list])
            #expect(set.status == 0, "\(set)")
            let get = try CLI.run(["--connect", list, "get", "a"])
            #expect(get.status == 0 && get.stdout == "5\n", "\(get)")
            let environment = try CLI.run(["get", "a"], environment: ["KVOD_HOST": list])
            #expect(environment.status == 0 && environment.stdout == "5\n", "\(environment)")
            // An entry without a port takes --port's.
            let defaultPort = try CLI.run(["get", "a", "--host", "127.0.0.1:\(dead), \(server.host)", "--port", String(server.port)])
            #expect(defaultPort.status == 0 && defaultPort.stdout == "5\n", "\(defaultPort)")
        }
    }

    @Test func everyAddressRefusingIsStatus3NamingEach() throws {
        let first = try Self.closedPort()
        let second = try Self.closedPort()
        let result = try CLI.run(["ping", "--host", "127.0.0.1:\(first),127.0.0.1:\(second)"])
        #expect(result.status == 3, "\(result)")
        #expect(result.stderr.hasPrefix("kvoctl: cannot connect to any of 2 members: 127.0.0.1:\(first): "), "\(result)")
        #expect(result.stderr.contains("127.0.0.1:\(second): "), "\(result)")
    }

    @Test(
        "a bad address list is a usage error naming it",
        arguments: [
            ("127.0.0.1:7070,", "has an empty address"),
            ("[::1", "is not an address"),
            ("host:0", "must be a number between 1 and 65535"),
            ("host:http", "must be a number between 1 and 65535"),
            ("a b:7070", "is not an address"),
        ])
    func badList(list: String, message: String) throws {
        let flag = try CLI.run(["get", "x", "--host", list])
        #expect(flag.status == 64, "\(flag)")
        #expect(flag.stderr.contains("--host: ") && flag.stderr.contains(message), "\(flag)")
        let environment = try CLI.run(["get", "x"], environment: ["KVOD_HOST": list])
        #expect(environment.status == 64, "\(environment)")
        #expect(environment.stderr.contains("KVOD_HOST: ") && environment.stderr.contains(message), "\(environment)")
    }

    @Test func failoverWaitMustBeANumberOfSeconds() throws {
        let result = try CLI.run(["get", "x", "--failover-wait", "-1"])
        #expect(result.status == 64 && result.stderr.contains("--failover-wait"), "\(result)")
    }

    @Test func clusterShowsAStandaloneKVODAndAnUnreachableAddress() throws {
        let dead = try Self.closedPort()
        try withKVOD { server in
            #expect(try CLI.run(["set", "a", "1"], on: server).status == 0)
            let list = "\(server.host):\(server.port),127.0.0.1:\(dead)"
            let table = try CLI.run(["cluster", "--host", list])
            #expect(table.status == 0, "\(table)")
            let rows = table.stdoutLines.map { $0.split(separator: " ", omittingEmptySubsequences: true).map(String.init) }
            #expect(rows.first == ["ADDRESS", "ROLE", "TERM", "APPLIED", "LAG", "LEADER", "WRITABLE"], "\(table)")
            #expect(rows.dropFirst().first == ["\(server.host):\(server.port)", "standalone", "-", "-", "-", "-", "yes"], "\(table)")
            #expect(rows.dropFirst(2).first?.prefix(2) == ["127.0.0.1:\(dead)", "unreachable"], "\(table)")

            let json = try CLI.run(["cluster", "--host", list, "--format", "json"])
            #expect(json.status == 0, "\(json)")
            let members = try parseJSON(json.stdout).arrayValue ?? []
            #expect(members.map { $0["role"] } == ["standalone", "unreachable"], "\(json)")
            #expect(members.map { $0["writable"] } == [true, false], "\(json)")
            #expect(members.last?["error"]?.stringValue?.contains("cannot connect") == true, "\(json)")
        }
        let none = try CLI.run(["cluster", "--host", "127.0.0.1:\(dead)"])
        #expect(none.status == 3, "\(none)")
        #expect(none.stderr.contains("no member accepts mutations"), "\(none)")
    }

    @Test func helpDocumentsTheListsAndTheClusterExitStatus() throws {
        let help = try CLI.run(["--help"])
        #expect(help.stdout.contains("CLUSTERS:") && help.stdout.contains("--failover-wait"), "\(help)")
        #expect(help.stdout.contains("no member is a leader that accepts mutations"), "\(help)")
        let cluster = try CLI.run(["cluster", "--help"])
        #expect(cluster.status == 0 && cluster.stdout.contains("--host <addresses>"), "\(cluster)")
    }
}

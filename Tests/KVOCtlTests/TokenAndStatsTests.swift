// kvoctl against a kvod with access control (`--token`, `KVOD_TOKEN`, for every command including `kvoctl -`), and
// `kvoctl stats` in both formats.

import TestSupport
import Testing
import WireProtocol

@Suite("kvoctl tokens and stats", .serialized)
struct TokenAndStatsTests {
    /// kvod with tokens `rw-token` (read-write) and `ro-token` (read-only).
    static func withProtectedKVOD(_ body: (KVODProcess) throws -> Void) throws {
        let scratch = try ScratchDirectory("kvoctl-tokens")
        let file = try scratch.write("tokens", "rw-token read-write\nro-token read-only\n")
        let server = try KVODProcess.start(["--token-file", file])
        defer { server.stop() }
        try body(server)
    }

    @Test func withoutATokenEveryCommandIsRefused() throws {
        try Self.withProtectedKVOD { server in
            let result = try CLI.run(["get", "a"], on: server, environment: ["KVOD_TOKEN": ""])
            #expect(result.status == 2, "\(result)")
            #expect(result.stderr.contains("error 1008: unauthorized: hello with a token first"), "\(result.stderr)")
        }
    }

    @Test func theTokenComesFromTheFlagOrTheEnvironment() throws {
        try Self.withProtectedKVOD { server in
            let set = try CLI.run(["set", "a", "1", "--token", "rw-token"], on: server)
            #expect(set.status == 0, "\(set)")
            let get = try CLI.run(["get", "a"], on: server, environment: ["KVOD_TOKEN": "ro-token"])
            #expect(get.status == 0, "\(get)")
            #expect(get.stdout == "1\n")
            // The flag wins over the environment.
            let denied = try CLI.run(["set", "a", "2", "--token", "ro-token"], on: server, environment: ["KVOD_TOKEN": "rw-token"])
            #expect(denied.status == 2)
            #expect(denied.stderr.contains(#"{"reason":"read-only token"}"#), "\(denied.stderr)")
            let wrong = try CLI.run(["ping", "--token", "nope"], on: server)
            #expect(wrong.status == 2)
            #expect(wrong.stderr.contains("wrong token"))
            let hello = try CLI.run(["hello"], on: server, environment: ["KVOD_TOKEN": "ro-token"])
            #expect(try parseJSON(hello.stdout)["access"] == "read-only", "\(hello)")
        }
    }

    @Test func scriptsPresentTheTokenFirst() throws {
        try Self.withProtectedKVOD { server in
            let result = try CLI.run(["-"], on: server, stdin: "set a 5\nget a\n", environment: ["KVOD_TOKEN": "rw-token"])
            #expect(result.status == 0, "\(result)")
            let lines = try result.stdoutLines.map { try parseJSON($0) }
            #expect(lines.map { $0["id"] } == [1, 2], "the hello's response is not echoed")
            #expect(lines.last?["result"]?["value"] == 5)
        }
    }

    @Test func watchWorksWithAReadOnlyToken() throws {
        try Self.withProtectedKVOD { server in
            let watch = try RunningCommand(
                try CLI.executable(), ["watch", "w", "--count", "1"] + server.connectionArguments,
                environment: ["KVOD_TOKEN": "ro-token"])
            try waitForSubscription(on: server, path: "w", token: "rw-token")
            #expect(try CLI.run(["set", "w", "7", "--token", "rw-token"], on: server).status == 0)
            let result = try watch.waitForExit(timeout: .seconds(10))
            #expect(result.status == 0, "\(result)")
            #expect(try parseJSON(result.stdout)["new"] == 7)
        }
    }

    @Test func statsPrintsTheFiguresForPeopleOrAsJSON() throws {
        try withKVOD { server in
            _ = try CLI.run(["set", "a", "1"], on: server)
            _ = try CLI.run(["set", "a", "2"], on: server)
            let json = try CLI.run(["stats", "--format", "json"], on: server)
            #expect(json.status == 0, "\(json)")
            let stats = try parseJSON(json.stdout)
            #expect(stats["mutations"] == 2)
            #expect(stats["seq"] == 2)
            #expect((stats["connections"]?.intValue ?? 0) >= 1)
            // The two earlier kvoctl connections are gone (their closes may still be on their way: at least one).
            #expect((stats["closes"]?["client_closed"]?.intValue ?? 0) >= 1)
            let text = try CLI.run(["stats"], on: server)
            #expect(text.status == 0, "\(text)")
            for expected in ["seq             2", " open, 4 accepted", "requests", "(2 mutations)", "closes          "] {
                #expect(text.stdout.contains(expected), "\(expected) in\n\(text.stdout)")
            }
        }
    }
}

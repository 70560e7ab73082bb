// kvoctl's failure modes and their exit statuses (ExitCodes.swift): cannot connect (3), server error (2), usage (64);
// the help text; and the KVOD_HOST/KVOD_PORT environment defaults.

import TestSupport
import Testing
import WireProtocol

@Suite("kvoctl exit statuses, help and environment")
struct ExitStatusTests {
    @Test func closedPortGivesStatus3AndAMessage() throws {
        let server = try KVODProcess.start()
        let port = server.port
        server.stop()
        let result = try CLI.run(["get", "x", "--host", "127.0.0.1", "--port", String(port)])
        #expect(result.status == 3, "\(result)")
        #expect(result.stderr.hasPrefix("kvoctl: cannot connect to 127.0.0.1:\(port): "), "\(result)")
        #expect(result.stdout.isEmpty)
    }

    @Test func serverErrorGivesStatus2AndCodeMessageAndData() throws {
        try withKVOD { server in
            #expect(try CLI.run(["set", "a", "5"], on: server).status == 0)
            let result = try CLI.run(["get", "a.b"], on: server)
            #expect(result.status == 2, "\(result)")
            #expect(result.stderr.hasPrefix("kvoctl: error 1005: "), "\(result)")
            #expect(result.stderr.contains(#""path""#), "the error's data is printed: \(result)")
            #expect(result.stdout.isEmpty)
        }
    }

    @Test func setThroughANonObjectGivesStatus2() throws {
        try withKVOD { server in
            #expect(try CLI.run(["set", "a", "\"text\""], on: server).status == 0)
            let result = try CLI.run(["set", "a.b", "1"], on: server)
            #expect(result.status == 2, "\(result)")
            #expect(result.stderr.hasPrefix("kvoctl: error 1005: "), "\(result)")
        }
    }

    @Test(
        "usage errors exit 64",
        arguments: [
            ["get"],
            ["set", "only-a-path"],
            ["frobnicate"],
            ["watch", "x", "--count", "0"],
            ["get", "x", "--port", "70000"],
            ["get", "x", "--timeout", "-1"],
            ["ping", "--no-such-flag"],
        ])
    func usageError(arguments: [String]) throws {
        let result = try CLI.run(arguments)
        #expect(result.status == 64, "\(result)")
        #expect(result.stderr.contains("Error:") || result.stderr.contains("Usage:"), "\(result)")
    }

    @Test func invalidEnvironmentPortIsAUsageError() throws {
        let result = try CLI.run(["ping"], environment: ["KVOD_PORT": "not-a-port"])
        #expect(result.status == 64, "\(result)")
        #expect(result.stderr.contains("KVOD_PORT"), "\(result)")
    }

    @Test func helpMentionsEverySubcommandAndTheExitStatuses() throws {
        let result = try CLI.run(["--help"])
        #expect(result.status == 0, "\(result)")
        for subcommand in ["get", "set", "watch", "ping", "hello", "-"] {
            #expect(result.stdout.contains("\n  \(subcommand) "), "--help does not list \(subcommand)")
        }
        for status in ["0 ", "2 ", "3 ", "4 ", "64 "] {
            #expect(result.stdout.contains("\n  \(status)"), "--help does not explain status \(status)")
        }
        #expect(result.stdout.contains("KVOD_HOST") && result.stdout.contains("KVOD_PORT"))
    }

    @Test(
        "every subcommand has help",
        arguments: ["get", "set", "watch", "ping", "hello", "-"])
    func subcommandHelp(subcommand: String) throws {
        let result = try CLI.run(["help", subcommand])
        #expect(result.status == 0, "\(result)")
        #expect(result.stdout.contains("USAGE: kvoctl \(subcommand)"), "\(result)")
        #expect(result.stdout.contains("--host") && result.stdout.contains("--port"))
    }

    @Test func environmentChoosesHostAndPort() throws {
        try withKVOD { server in
            let environment = ["KVOD_HOST": server.host, "KVOD_PORT": String(server.port)]
            let ping = try CLI.run(["ping"], environment: environment)
            #expect(ping.status == 0 && ping.stdout == "pong\n", "\(ping)")
        }
    }

    @Test func flagsOverrideTheEnvironment() throws {
        try withKVOD { server in
            let environment = ["KVOD_HOST": "192.0.2.1", "KVOD_PORT": "1"]
            let ping = try CLI.run(["ping"], on: server, environment: environment)
            #expect(ping.status == 0 && ping.stdout == "pong\n", "\(ping)")
        }
    }

    @Test func environmentPortIsUsedInTheFailureMessage() throws {
        let server = try KVODProcess.start()
        let port = server.port
        server.stop()
        let result = try CLI.run(["ping"], environment: ["KVOD_HOST": "127.0.0.1", "KVOD_PORT": String(port)])
        #expect(result.status == 3, "\(result)")
        #expect(result.stderr.hasPrefix("kvoctl: cannot connect to 127.0.0.1:\(port): "), "\(result)")
    }
}

@Suite("kvoctl option order")
struct OptionOrderTests {
    @Test func connectionOptionsMayComeBeforeTheSubcommand() throws {
        try withKVOD { server in
            let port = String(server.port)
            #expect(try runCommand(CLI.executable(), ["--port", port, "set", "a", "1"]).status == 0)
            let get = try runCommand(CLI.executable(), ["--host", "127.0.0.1", "--port=\(port)", "--timeout", "5", "get", "a"])
            #expect(get.status == 0, "\(get)")
            #expect(get.stdout == "1\n")
            // A value that looks like an option after the subcommand is left alone.
            #expect(try runCommand(CLI.executable(), ["--port", port, "set", "n", "-7"]).stdout.contains("seq"))
        }
    }
}

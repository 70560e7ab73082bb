// kvoctl's output as people and pipes see it: --version, --format json|pretty|text, colours on a terminal (run under
// script(1), a real pseudo-terminal) and never in a pipe, NO_COLOR and CLICOLOR_FORCE.

import Foundation
import TestSupport
import Testing
import WireProtocol

@Suite("kvoctl output formats")
struct OutputFormatTests {
    /// Neither colour variable, whatever the environment running the tests has.
    static let plain = ["NO_COLOR": "", "CLICOLOR_FORCE": ""]

    @Test func versionIsKvodsVersion() throws {
        let kvoctl = try CLI.run(["--version"])
        let kvod = try runCommand(try existingBinaryURL(named: "kvod"), ["--version"])
        #expect(kvoctl.status == 0 && kvod.status == 0)
        #expect(kvoctl.stdout == kvod.stdout && kvoctl.stdout.hasPrefix("0."), "\(kvoctl) \(kvod)")
    }

    @Test func pipedOutputIsOneCompactLineAndEachFormatDoesWhatItSays() throws {
        try withKVOD { server in
            _ = try CLI.run(["set", "person", #"{"name":"Ann","tags":["a","b"]}"#], on: server)
            let piped = try CLI.run(["get", "person"], on: server, environment: Self.plain)
            #expect(piped.stdoutLines.count == 1 && !piped.stdout.contains("\u{1B}"), "\(piped)")
            #expect(withoutObjectIDs(try parseJSON(piped.stdout)) == .json(#"{"name":"Ann","tags":["a","b"]}"#))
            let pretty = try CLI.run(["get", "person", "--format", "pretty"], on: server, environment: Self.plain)
            #expect(pretty.stdout.contains("\n  \"name\": \"Ann\",\n") && !pretty.stdout.contains("\u{1B}"), "\(pretty)")
            #expect(try parseJSON(pretty.stdout) == parseJSON(piped.stdout))
            #expect(try CLI.run(["get", "person.name", "--format", "text"], on: server).stdout == "Ann\n")
            #expect(try CLI.run(["get", "person.tags", "--format", "text"], on: server).stdout == "[\"a\",\"b\"]\n")
            #expect(try CLI.run(["get", "person.name", "--format", "json"], on: server).stdout == "\"Ann\"\n")
            // The mutations print their result the same way.
            let set = try CLI.run(["set", "n", "1", "--format", "pretty"], on: server, environment: Self.plain)
            #expect(set.stdout.hasPrefix("{\n  \"seq\": "), "\(set)")
            let bad = try CLI.run(["get", "n", "--format", "yaml"], on: server)
            #expect(bad.status == 64 && bad.stderr.contains("yaml"), "\(bad)")
        }
    }

    @Test func coloursOnlyWhereAskedOrOnATerminal() throws {
        try withKVOD { server in
            _ = try CLI.run(["set", "greeting", "hello"], on: server)
            let forced = try CLI.run(["get", "greeting"], on: server, environment: ["CLICOLOR_FORCE": "1", "NO_COLOR": ""])
            #expect(forced.stdout == "\u{1B}[32m\"hello\"\u{1B}[0m\n", "\(forced)")
            // On a pseudo-terminal: pretty and coloured by default; NO_COLOR keeps it pretty but plain.
            let kvoctl = try CLI.executable().path
            let command = "\(kvoctl) get '' --host \(server.host) --port \(server.port)"
            let terminal = try runCommand(
                URL(fileURLWithPath: "/usr/bin/script"), ["-qec", command, "/dev/null"], environment: Self.plain)
            #expect(terminal.status == 0, "\(terminal)")
            #expect(terminal.stdout.contains("\u{1B}[34;1m\"greeting\"\u{1B}[0m"), "\(terminal)")
            #expect(terminal.stdout.contains("\n  "), "pretty on a terminal: \(terminal)")
            let noColor = try runCommand(
                URL(fileURLWithPath: "/usr/bin/script"), ["-qec", command, "/dev/null"],
                environment: ["NO_COLOR": "1", "CLICOLOR_FORCE": ""])
            #expect(noColor.status == 0 && !noColor.stdout.contains("\u{1B}") && noColor.stdout.contains("\n  "),
                "\(noColor)")
        }
    }

    @Test func watchAndStatsTakeThePrettyFormat() throws {
        try withDefaultModelKVOD { server in
            let watch = try CLI.run(
                ["watch", "labColor.lComponent", "--initial", "--count", "1", "--format", "pretty"], on: server,
                environment: Self.plain)
            #expect(watch.status == 0 && watch.stdout.contains("\n  \"initial\": true"), "\(watch)")
            let stats = try CLI.run(["stats", "--format", "pretty"], on: server, environment: Self.plain)
            #expect(stats.status == 0 && stats.stdout.contains("\n  \"seq\": "), "\(stats)")
            #expect(try parseJSON(stats.stdout)["seq"] != nil)
        }
    }
}

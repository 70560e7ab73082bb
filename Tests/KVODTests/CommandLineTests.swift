// kvod's own command-line parser (Sources/kvod/DaemonArguments.swift) as a process sees it: `--help` and `--version`
// win over everything else and exit 0, every option of the help is accepted in both spellings, and a command line
// that does not fit gets `Error: ...`, the usage and exit 64 (EX_USAGE), with nothing served. And kvod, which parses
// its options without swift-argument-parser, links no Foundation (kvoctl, which keeps ArgumentParser, does).
import Foundation
import KVOClient
import TestSupport
import Testing
import WireProtocol

/// The tail every usage error ends with.
private let usageTail = "Usage: kvod <options>\n  See 'kvod --help' for more information.\n"

/// The long options `kvod --help` lists (`--empty/--no-empty` gives both).
private func optionsInHelp(_ help: String) -> [String] {
    let section = help.components(separatedBy: "OPTIONS:\n").last ?? ""
    return section.split(separator: "\n").filter { $0.hasPrefix("  -") }.flatMap { line in
        line.split(whereSeparator: { $0 == " " || $0 == "/" || $0 == "," })
            .filter { $0.hasPrefix("--") }.map(String.init)
    }
}

@Suite(.serialized) struct CommandLineTests {
    @Test func helpListsEveryOptionOnStdoutAndExitsZero() throws {
        let help = try runKVOD(["--help"])
        #expect(help.status == 0, "\(help)")
        #expect(help.stderr.isEmpty)
        #expect(help.stdout.hasPrefix("OVERVIEW: A key-value-observing server"))
        #expect(help.stdout.contains("USAGE: kvod <options>\n\nOPTIONS:\n"))
        #expect(help.stdout.contains("  --port <port>           The TCP port to listen on; 0 picks a free one. Env\n"))
        #expect(help.stdout.contains("  --empty/--no-empty      Serve an empty open root"))
        #expect(help.stdout.contains("  -h, --help              Show help information.\n"))
        let lines = help.stdout.split(separator: "\n", omittingEmptySubsequences: false)
        #expect(lines.allSatisfy { $0.count <= 80 }, "wrapped at 80 columns")
        let options = optionsInHelp(help.stdout)
        #expect(options.count >= 35)
        #expect(Set(options).count == options.count, "each option once: \(options)")
        #expect(try runKVOD(["-h"]).stdout == help.stdout)
        // Asking for help wins over anything else on the line, bad or not.
        #expect(try runKVOD(["--port", "1", "--help"]).stdout == help.stdout)
        #expect(try runKVOD(["--bogus", "-h"]).status == 0)
    }

    @Test func everyOptionInTheHelpIsAccepted() throws {
        let help = try runKVOD(["--help"]).stdout
        // Each setting is given its default (a valid value that needs no other setting), or one of these.
        let defaults = try printedConfiguration([])
        let values = [
            "--port": "0", "--ws-origins": "*", "--cluster": "c", "--advertise": "127.0.0.1:1",
            "--model": "/nonexistent/model.json", "--data-dir": "/nonexistent/data", "--metrics-host": "127.0.0.1",
            "--snapshot-cpus": "0",
        ]
        let notSettings: Set = ["--help", "--version", "--print-config", "--config", "--dump-snapshot", "--empty",
            "--no-empty", "--tls-only", "--no-tls-only"]
        // cluster-etcd needs data-dir, cluster and advertise; the token file is read at start; tls-cert and tls-key
        // go together (TLSTests).
        let needMore: Set = [
            "--cluster-etcd", "--token-file", "--tls-cert", "--tls-key", "--cluster-etcd-cert", "--cluster-etcd-key",
        ]
        var checked = 0
        for option in optionsInHelp(help) where !notSettings.contains(option) && !needMore.contains(option) {
            let name = String(option.dropFirst(2))
            let value = try #require(values[option] ?? defaults[name].map(\.value).flatMap { $0 == "(none)" ? "1" : $0 })
            for arguments in [[option, value], ["\(option)=\(value)"]] {
                let settings = try printedConfiguration(arguments)
                #expect(settings[name]?.source == option, "\(arguments): \(String(describing: settings[name]))")
            }
            checked += 1
        }
        #expect(checked >= 27)
    }

    @Test func togglesTakeBothSpellingsAndTheLastOptionWins() throws {
        #expect(try printedConfiguration(["--empty"])["empty"]! == ("true", "--empty"))
        #expect(try printedConfiguration(["--empty", "--no-empty"])["empty"]! == ("false", "--empty"))
        #expect(try printedConfiguration(["--port", "1", "--port=2"])["port"]! == ("2", "--port"))
        // A flag's value beats the environment even when the flag turns the setting off.
        #expect(try printedConfiguration(["--no-empty"], environment: ["KVOD_EMPTY": "true"])["empty"]! == ("false", "--empty"))
        // `=` lets a value start with a dash.
        #expect(try printedConfiguration(["--metrics-host=-"])["metrics-host"]! == ("-", "--metrics-host"))
    }

    @Test func versionPrintsWhatHelloReports() throws {
        let version = try runKVOD(["--version"])
        #expect(version.status == 0, "\(version)")
        #expect(try runKVOD(["--version", "--bogus"]).stdout == version.stdout)
        let server = try KVODProcess.start()
        defer { _ = server.stop() }
        let hello = try server.client().hello()
        #expect(hello["version"]?.stringValue.map { $0 + "\n" } == version.stdout)
    }

    @Test(
        "command lines that do not fit stop kvod with the usage and exit 64",
        arguments: [
            (["--bogus"], "Unknown option '--bogus'\n"),
            (["--prot", "7070"], "Unknown option '--prot' (did you mean '--port'?)\n"),
            (["--no-emty"], "Unknown option '--no-emty' (did you mean '--no-empty'?)\n"),
            (["--no-port"], "Unknown option '--no-port'"),
            (["-p", "7070"], "Unknown option '-p'\n"),
            (["7070"], "Unexpected argument '7070'\n"),
            (["--", "--port"], "Unexpected argument '--port'\n"),
            (["--empty=true"], "The option '--empty' does not take any value, but 'true' was specified.\n"),
            (["--print-config=yes"], "The option '--print-config' does not take any value, but 'yes' was specified.\n"),
            (["--port"], "Missing value for '--port <port>'\nHelp:  --port <port>  The TCP port to listen on; 0 picks a free one. Env KVOD_PORT; default 7070.\n"),
            (["--host", "--port", "1"], "Missing value for '--host <address>'\nHelp:  --host <address>  The address to listen on."),
            (["--port", "-1"], "Missing value for '--port <port>'\n"),
            (["--dump-snapshot"], "Missing value for '--dump-snapshot <dir>'\n"),
        ] as [([String], String)])
    func badCommandLines(arguments: [String], message: String) throws {
        let result = try runKVOD(arguments)
        #expect(result.status == 64, "\(result)")
        #expect(result.stderr.hasPrefix("Error: " + message), "\(result.stderr)")
        #expect(result.stderr.hasSuffix(usageTail), "\(result.stderr)")
        #expect(result.stdout.isEmpty, "nothing served, nothing printed: \(result.stdout)")
    }

    @Test(
        "values the parser takes but the setting refuses name the flag",
        arguments: [
            (["--port", "7o70"], "kvod: --port: expected an integer from 0 to 65535, got '7o70'\n"),
            (["--port="], "kvod: --port: expected an integer from 0 to 65535, got ''\n"),
            (["--history", "-5"] , "Error: Missing value for '--history <count>'"),
            (["--history=-5"], "kvod: --history: expected an integer from 0 to 10000000, got '-5'\n"),
            (["--max-json-depth", "65"], "kvod: --max-json-depth: expected an integer from 2 to 64, got '65'\n"),
            (["--snapshot-every", "99999999999999999999"], "kvod: --snapshot-every: expected an integer from 0 or more"),
            (["--busy-poll", "1000001"], "kvod: --busy-poll: expected an integer from 0 to 1000000, got '1000001'\n"),
            (["--busy-poll=fast"], "kvod: --busy-poll: expected an integer from 0 to 1000000, got 'fast'\n"),
            (["--snapshot-cpus", "2-1"], "kvod: --snapshot-cpus: '2-1' is not a CPU or a range of CPUs: write e.g. 1,3"),
            (["--snapshot-cpus", "0,100000"], "kvod: --snapshot-cpus: CPU 100000 is not on this machine (its CPUs are 0-"),
            (["--cluster", "a b"], "kvod: --cluster: 'a b': a cluster name is letters"),
            (["--advertise", "nowhere"], "kvod: --advertise: 'nowhere' is not HOST:PORT\n"),
            (["--ws-origins", "example.com"], "kvod: --ws-origins: 'example.com' is not an origin"),
            (["--cluster-etcd", "https://etcd"], "kvod: --cluster-etcd: 'https://etcd' is not an etcd client URL"),
        ] as [([String], String)])
    func badValues(arguments: [String], message: String) throws {
        let result = try runKVOD(arguments)
        #expect(result.status == 64, "\(result)")
        #expect(result.stderr.hasPrefix(message), "\(result.stderr)")
        #expect(!result.stdout.contains("listening"))
    }

    #if os(Linux)
    @Test func kvodLinksNoFoundationAndKvoctlDoes() throws {
        // A binary that uses FoundationEssentials names it: as a library it loads (a debug build) or in its symbols
        // and metadata (a static one). kvoctl is the control: swift-argument-parser brings it in.
        func mentionsFoundation(_ name: String) throws -> Bool {
            let bytes = try Data(contentsOf: try existingBinaryURL(named: name))
            return bytes.range(of: Data("FoundationEssentials".utf8)) != nil
        }
        #expect(try mentionsFoundation("kvoctl"))
        #expect(try !mentionsFoundation("kvod"))
    }
    #endif
}

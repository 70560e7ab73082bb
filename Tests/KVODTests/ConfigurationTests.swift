// kvod's configuration as a process sees it (docs/CONFIGURATION.md): flags over KVOD_* over the config file over
// defaults, checked with `--print-config` and on a live server; every bad file, key or value stops kvod with a
// message naming its source; and `kvod --help` and the docs list the same settings.
import Foundation
import KVOClient
import TestSupport
import Testing
import WireProtocol

/// Runs kvod to completion (for `--print-config`, `--help` and start-up errors).
func runKVOD(_ arguments: [String], environment: [String: String] = [:]) throws -> CommandResult {
    try runCommand(try existingBinaryURL(named: "kvod"), arguments, environment: environment, timeout: .seconds(20))
}

/// `--print-config`'s output: setting → (value, source).
func printedConfiguration(
    _ arguments: [String], environment: [String: String] = [:], sourceLocation: SourceLocation = #_sourceLocation
) throws -> [String: (value: String, source: String)] {
    let result = try runKVOD(arguments + ["--print-config"], environment: environment)
    #expect(result.status == 0, "\(result)", sourceLocation: sourceLocation)
    guard case .object(let object) = try JSONParser.parse(result.stdout) else { return [:] }
    var settings: [String: (value: String, source: String)] = [:]
    for (name, entry) in object.members {
        settings[name] = (entry["value"]?.stringValue ?? "?", entry["source"]?.stringValue ?? "?")
    }
    return settings
}

@Suite(.serialized) struct ConfigurationTests {
    @Test func flagsWinOverTheEnvironmentWhichWinsOverTheFile() throws {
        let scratch = try ScratchDirectory("config")
        let file = try scratch.write(
            "kvod.json",
            #"{"max-line-bytes": 4096, "max-subscriptions": 7, "log-level": "debug", "port": 7171}"#)
        let settings = try printedConfiguration(
            ["--config", file, "--max-line-bytes", "16384"],
            environment: ["KVOD_MAX_LINE_BYTES": "8192", "KVOD_MAX_SUBSCRIPTIONS": "9", "KVOD_PORT": ""])
        #expect(settings["max-line-bytes"]! == ("16384", "--max-line-bytes"))
        #expect(settings["max-subscriptions"]! == ("9", "KVOD_MAX_SUBSCRIPTIONS"))
        #expect(settings["log-level"]! == ("debug", "\(file): \"log-level\""))
        #expect(settings["port"]! == ("7171", "\(file): \"port\""), "an empty variable counts as unset")
        #expect(settings["max-connections"]! == ("10000", "default"))
        #expect(settings["max-context-bytes"]! == ("4096", "default"))
        #expect(settings["config"]! == (file, "--config"))
    }

    @Test func kvodConfigNamesTheFileAndRelativePathsInItFollowIt() throws {
        let scratch = try ScratchDirectory("config")
        try scratch.write("tokens", "abc read-only\n")
        let file = try scratch.write("kvod.json", #"{"token-file": "tokens", "model": "/abs/model.json"}"#)
        let settings = try printedConfiguration([], environment: ["KVOD_CONFIG": file])
        #expect(settings["config"]! == (file, "KVOD_CONFIG"))
        #expect(settings["token-file"]!.value == scratch.path + "/tokens")
        #expect(settings["model"]!.value == "/abs/model.json")
        #expect(settings["token"] == nil, "no KVOD_TOKEN, and a token is never printed")
    }

    @Test func theLayersReachTheServer() throws {
        let scratch = try ScratchDirectory("config")
        let file = try scratch.write("kvod.json", #"{"host": "127.0.0.1", "port": 0, "max-subscriptions": 1, "max-connections": 1}"#)
        // No --host/--port flags: the file says where; the environment overrides one limit.
        let server = try KVODProcess.start(
            ["--config", file], environment: ["KVOD_MAX_CONNECTIONS": "5", "KVOD_HOST": "", "KVOD_PORT": ""],
            listenArguments: [])
        let client = try server.client()
        _ = try client.subscribe("a", options: [])
        #expect(throws: KVOClientError.self) { try client.subscribe("b", options: []) }
        let second = try server.client()
        #expect(try second.call("ping") == "pong", "the environment's max-connections (5) beat the file's (1)")
    }

    @Test(
        "bad settings stop kvod with a message naming their source",
        arguments: [
            (["--port", "70000"], [:], "--port: expected an integer from 0 to 65535, got '70000'"),
            (["--max-connections", "many"], [:], "--max-connections: expected an integer from 1 to"),
            ([], ["KVOD_MAX_LINE_BYTES": "12"], "KVOD_MAX_LINE_BYTES: expected an integer from 1024 to"),
            ([], ["KVOD_LOG_FORMAT": "xml"], "KVOD_LOG_FORMAT: expected one of text, json, got 'xml'"),
            ([], ["KVOD_FSYNC": "sometimes"], "KVOD_FSYNC: expected one of always, everysec, no"),
            (["--log-level", "loud"], [:], "--log-level: expected one of trace, debug, info"),
            ([], ["KVOD_EMPTY": "maybe"], "KVOD_EMPTY: expected true or false, got 'maybe'"),
            (["--empty", "--model", "x.json"], [:], "empty and model exclude each other"),
            (["--token-file", "/nonexistent/tokens"], [:], "token file /nonexistent/tokens: cannot be read"),
            (["--config", "/nonexistent/kvod.json"], [:], "config file /nonexistent/kvod.json: cannot be read"),
            ([], ["KVOD_TOKEN": "two words"], "KVOD_TOKEN: a token may not contain spaces"),
            (["--sync-replicas", "17"], [:], "--sync-replicas: expected an integer from 0 to 16, got '17'"),
            ([], ["KVOD_SYNC_REPLICAS": "1"], "sync-replicas needs cluster-etcd"),
        ] as [([String], [String: String], String)])
    func badSettings(arguments: [String], environment: [String: String], message: String) throws {
        let result = try runKVOD(arguments, environment: environment)
        #expect(result.status == 64, "\(result)")
        #expect(result.stderr.contains("kvod: " + message), "\(result.stderr)")
        #expect(!result.stdout.contains("listening"))
    }

    @Test(
        "bad config files stop kvod with a message naming the file and key",
        arguments: [
            (#"{"prot": 7070}"#, #"unknown key "prot" (did you mean "port"?)"#),
            (#"{"port": "7070"}"#, #"kvod.json: "port": expected an integer from 0 to 65535, got "7070""#),
            (#"{"host": 127}"#, #"kvod.json: "host": expected a string, got 127"#),
            (#"{"empty": "yes"}"#, #"kvod.json: "empty": expected true or false, got "yes""#),
            (#"{"config": "other.json"}"#, #"unknown key "config""#),
            (#"{"token": "secret"}"#, #"unknown key "token""#),
            (#"[1, 2]"#, "expected a JSON object of options"),
            (#"{"port": 7070"#, "not valid JSON"),
        ])
    func badConfigFiles(contents: String, message: String) throws {
        let scratch = try ScratchDirectory("config")
        let file = try scratch.write("kvod.json", contents)
        let result = try runKVOD(["--config", file])
        #expect(result.status == 64, "\(result)")
        #expect(result.stderr.contains(message), "\(result.stderr)")
        #expect(result.stderr.contains(file), "the message names the file: \(result.stderr)")
    }

    @Test func badTokenFilesNameTheLine() throws {
        let scratch = try ScratchDirectory("config")
        let file = try scratch.write("tokens", "# tokens\ngood read-write\nbad read-mostly\n")
        let result = try runKVOD(["--token-file", file])
        #expect(result.status == 64)
        #expect(result.stderr.contains("\(file):3: unknown access 'read-mostly'"), "\(result.stderr)")
    }

    @Test func helpAndTheConfigurationDocumentListTheSameSettings() throws {
        let help = try runKVOD(["--help"])
        #expect(help.status == 0)
        let document = try String(
            contentsOf: URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
                .deletingLastPathComponent().appendingPathComponent("docs/CONFIGURATION.md"),
            encoding: .utf8)
        let optionsSection = help.stdout.components(separatedBy: "OPTIONS:").last ?? ""
        let options = optionsSection.split(whereSeparator: { $0 == " " || $0 == "\n" || $0 == "/" })
            .map { String($0.prefix(while: { $0.isLetter || $0.isNumber || $0 == "-" })) }
            .filter { $0.hasPrefix("--") && $0.count > 2 && !$0.hasPrefix("--no-") }
        let settings = Set(options).subtracting(["--help", "--version", "--print-config", "--dump-snapshot"])
        #expect(settings.count >= 20)
        for option in settings {
            let name = option.dropFirst(2)
            #expect(document.contains("`\(option)"), "docs/CONFIGURATION.md lacks \(option)")
            let environment = "KVOD_" + name.uppercased().replacingOccurrences(of: "-", with: "_")
            #expect(help.stdout.contains(environment), "--help lacks \(environment)")
            #expect(document.contains(environment), "docs/CONFIGURATION.md lacks \(environment)")
        }
        #expect(document.contains("KVOD_TOKEN"))
    }
}

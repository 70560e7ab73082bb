// kvoctl's routing table and its public entry point, `KVOCtlEntry`, which the kvoctl executable calls. Each
// subcommand lives in Commands/<Name>.swift; shared connection options in ConnectionOptions.swift; exit statuses in
// ExitCodes.swift.

import ArgumentParser
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Runs kvoctl with the process's arguments and exits: the one public door into this module.
public enum KVOCtlEntry {
    /// Parses `CommandLine.arguments` as kvoctl does and runs the command; never returns.
    public static func main() -> Never {
        KVOCtl.main()
        exit(0)
    }
}

/// The kvoctl command: a command-line client for kvod.
struct KVOCtl: ParsableCommand {
    /// kvoctl's version: kvod's (`KVODVersion.current`, which a test compares it with).
    static let version = "0.1.0"

    static let configuration = CommandConfiguration(
        commandName: "kvoctl",
        abstract: "Command-line client for kvod, the key-value-observing server.",
        discussion: """
            Reads and writes values by key path and watches them change, over kvod's line-delimited JSON-RPC \
            protocol (see Protocol/README.md).

            EXAMPLES:
              kvoctl set person.firstName Ada     # not JSON, so stored as "Ada"
              kvoctl set person.address '{"city":"Paris"}'
              kvoctl get person.address.city      # prints "Paris"
              kvoctl watch person.address.city --initial --old --new --count 1
              kvoctl watch labColor.color --prior --old --new --format text
              kvoctl insert department.employees '{"name":"Ada","salary":100}'
              kvoctl ls department.employees --limit 10
              kvoctl describe labColor
              KVOD_TOKEN=s3cret kvoctl stats      # the token for kvod --token-file
              printf 'get person.firstName\\nping\\n' | kvoctl -
              kvoctl --host 10.0.0.11,10.0.0.12 set a 1     # needs a cluster
              kvoctl cluster --host 10.0.0.11,10.0.0.12,10.0.0.13   # needs a cluster

            CLUSTERS: --host (or --connect, or KVOD_HOST) may list several members, \
            HOST[:PORT],HOST[:PORT],... kvoctl connects to the first that answers. A mutation refused with 1012 "not the leader" is sent again to \
            the leader the refusal names, or, during an election, again after a pause, for up to --failover-wait \
            seconds (default 10). A watch given several addresses moves to another member when its connection \
            drops and resumes after the last seq it printed (the seqs are the same on every member).

            OUTPUT: values print as JSON, indented and coloured on a terminal, one compact line when piped; \
            --format json|pretty|text picks (text: a string without its quotes). NO_COLOR=1 turns the colours off, \
            CLICOLOR_FORCE=1 on. Errors and notices (waiting for a leader) go to stderr.

            SHELL COMPLETION (bash: the first line, also in ~/.bashrc; zsh: _kvoctl in a folder of $fpath; fish: \
            kvoctl.fish in ~/.config/fish/completions):
              source <(kvoctl --generate-completion-script bash)
              kvoctl --generate-completion-script zsh > _kvoctl
              kvoctl --generate-completion-script fish > kvoctl.fish

            ENVIRONMENT:
              KVOD_HOST, KVOD_PORT   defaults for --host (one address or a list) and --port
              KVOD_TOKEN             the token to present in hello (default for --token)
              NO_COLOR, CLICOLOR_FORCE  no colours on a terminal; colours even when piped

            \(KVOCtlExitCode.helpText)
            """,
        version: KVOCtl.version,
        subcommands: [
            Get.self, Set.self, List.self, Watch.self, Insert.self, Remove.self, Replace.self, Tx.self, Validate.self,
            Describe.self, Observers.self, Stats.self, Ping.self, Hello.self, Cluster.self, Script.self,
        ]
    )

    /// Ignores SIGPIPE (a vanished peer becomes an EPIPE error, not a silent death), then runs the parsed command.
    static func main() {
        signal(SIGPIPE, SIG_IGN)
        self.main(Self.connectionOptionsAfterSubcommand(Array(CommandLine.arguments.dropFirst())))
    }

    /// The connection options every subcommand takes, which people also write before the subcommand
    /// (`kvoctl --port 7171 get a`): argument-parser only reads a subcommand's options after its name, so leading ones
    /// are moved behind the subcommand.
    static func connectionOptionsAfterSubcommand(_ arguments: [String]) -> [String] {
        let valued: Swift.Set<String> = ["--host", "--connect", "--port", "--timeout", "--failover-wait", "--token"]
        var leading: [String] = []
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            if valued.contains(argument), index + 1 < arguments.count {
                leading += [argument, arguments[index + 1]]
                index += 2
            } else if let name = argument.split(separator: "=", maxSplits: 1).first, argument.contains("="),
                valued.contains(String(name))
            {
                leading.append(argument)
                index += 1
            } else {
                break
            }
        }
        guard !leading.isEmpty, index < arguments.count else { return arguments }
        return [arguments[index]] + leading + arguments[(index + 1)...]
    }
}

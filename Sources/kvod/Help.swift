// `kvod --help` and the usage error, rendered from the option table (DaemonOptions.swift), so the help lists exactly
// the options the parser accepts, each with the environment variable and default its setting uses. The layout is the
// conventional one (an overview, the usage, then the options with their help in a column at 26, wrapped at 80).

enum Help {
    static let abstract = "A key-value-observing server: an observable object graph over line-delimited JSON-RPC 2.0."

    static let discussion = """
        kvod holds an object graph in memory and serves it over TCP, one JSON-RPC 2.0 message per line. Clients \
        get and set values by key path and subscribe to key paths with the KVO options new, old, initial and \
        prior. The protocol is described in Protocol/README.md.

        Every option below may also be set in the environment (KVOD_ and the option name in capitals, as shown) \
        or in a JSON config file (--config FILE or KVOD_CONFIG) whose keys are the long option names. A flag \
        wins over the environment, which wins over the file. Unknown keys and bad values stop kvod at start \
        with a message naming where they came from. docs/CONFIGURATION.md describes every setting.

        Access control: with --token-file or KVOD_TOKEN, clients must send hello with a token first. Tokens \
        are never given on the command line.

        On SIGTERM or SIGINT kvod sends pending output, tells clients it is closing, and exits 0. A \
        configuration error exits 64, and so does a command line it cannot parse.

        EXAMPLES:
          kvod                              # the default model on 127.0.0.1:7070
          kvod --port 7171 --data-dir data  # keeps the graph across restarts
          kvod --empty --web-port 8080      # no model; the inspector on :8080
          kvod --model shop.json            # needs shop.json (docs/MODEL.md)
          kvod --print-config --port 7171   # the settings and their sources
        """

    static let usage = "kvod <options>"

    /// The column the options' help starts in, and the width text is wrapped to.
    private static let helpColumn = 26
    private static let width = 80

    /// The whole `--help` text.
    static func text(options: [DaemonOption]) -> String {
        var text = Self.wrap("OVERVIEW: \(Self.abstract)") + "\n\n" + Self.wrap(Self.discussion) + "\n\n"
        text += "USAGE: \(Self.usage)\n\nOPTIONS:\n"
        for option in options {
            let label = "  " + option.label
            let help = Self.wrap(option.help, indent: Self.helpColumn)
            text += label.count < Self.helpColumn ? label + help.dropFirst(label.count) : label + "\n" + help
            text += "\n"
        }
        return text + "\n"
    }

    /// What a command line kvod cannot parse gets on stderr: the problem, the option's help for a missing value, and
    /// where to find the usage.
    static func usageError(_ error: UsageError, options: [DaemonOption]) -> String {
        var text = "Error: \(error.message)\n"
        if let name = error.option, let option = options.first(where: { $0.name == name }) {
            text += "Help:  \(option.label)  \(option.help)\n"
        }
        return text + "Usage: \(Self.usage)\n  See 'kvod --help' for more information.\n"
    }

    /// `text` wrapped at spaces into lines shorter than the width, each but empty ones indented by `indent`; a line
    /// break in `text` is kept, and a word longer than a line stands alone.
    static func wrap(_ text: String, indent: Int = 0) -> String {
        let columns = Self.width - indent
        var lines: [Substring] = []
        for paragraph in text.split(separator: "\n", omittingEmptySubsequences: false) {
            var rest = paragraph
            while rest.count > columns {
                let chunk = rest.prefix(columns)
                guard let space = chunk.lastIndex(of: " ") ?? rest.firstIndex(of: " ") else { break }
                lines.append(rest[..<space])
                rest = rest[rest.index(after: space)...]
            }
            lines.append(rest)
        }
        let margin = String(repeating: " ", count: indent)
        return lines.map { $0.isEmpty ? "" : margin + $0 }.joined(separator: "\n")
    }
}

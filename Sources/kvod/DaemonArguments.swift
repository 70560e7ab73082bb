// kvod's command line, parsed against the option table (DaemonOptions.swift): `--name VALUE` or `--name=VALUE` for an
// option with a value (a following word that starts with `-` is not taken as a value), `--name` / `--no-name` for a
// toggle, `--name` for a flag; the last of a repeated option wins. `-h`/`--help` anywhere asks for the help and
// `--version` for the version, whatever else is on the line. Anything else (an unknown option, a missing or unwanted
// value, a word that is no option) is a UsageError, which the Daemon prints with the usage and exits 64 (EX_USAGE).

/// What the command line asks kvod to do.
enum DaemonCommand {
    /// Run with these options (serve, or `--print-config`, or `--dump-snapshot`).
    case run(DaemonArguments)
    /// Print the help.
    case help
    /// Print the version.
    case version
}

/// A command line that does not fit the table.
struct UsageError: Error, Equatable {
    let message: String
    /// The option to show the help of under the message (for a missing value), if any.
    var option: String?
}

/// The options given on the command line, by long name.
struct DaemonArguments {
    /// Each option's last value: the text given, "true" for a flag, "true" or "false" for a toggle.
    private(set) var values: [String: String] = [:]

    /// The value given for `name`, or nil when the option was not given.
    func value(of name: String) -> String? {
        self.values[name]
    }

    /// Whether the option `name` was given.
    func contains(_ name: String) -> Bool {
        self.values[name] != nil
    }

    /// Parses `arguments` (without the program name) against `options`.
    static func parse(_ arguments: [String], options: [DaemonOption]) throws(UsageError) -> DaemonCommand {
        let beforeSeparator = arguments.prefix { $0 != "--" }
        if beforeSeparator.contains(where: { $0 == "--help" || $0 == "-h" }) { return .help }
        if beforeSeparator.contains("--version") { return .version }

        var parsed = DaemonArguments()
        var index = arguments.startIndex
        while index < arguments.endIndex {
            let argument = arguments[index]
            index += 1
            if argument == "--" {
                if index < arguments.endIndex {
                    throw UsageError(message: "Unexpected argument '\(arguments[index])'")
                }
                break
            }
            guard argument.hasPrefix("--") else {
                if argument.hasPrefix("-") && argument.count > 1 {
                    throw UsageError(message: "Unknown option '\(argument)'")
                }
                throw UsageError(message: "Unexpected argument '\(argument)'")
            }
            let body = argument.dropFirst(2)
            let name: String
            let inlineValue: String?
            if let equals = body.firstIndex(of: "=") {
                name = String(body[..<equals])
                inlineValue = String(body[body.index(after: equals)...])
            } else {
                name = String(body)
                inlineValue = nil
            }
            guard let (option, negated) = Self.option(named: name, in: options) else {
                throw UsageError(message: "Unknown option '--\(name)'" + Self.suggestion(for: name, in: options))
            }
            switch option.kind {
            case .value:
                if let inlineValue {
                    parsed.values[option.name] = inlineValue
                } else if index < arguments.endIndex, !Self.looksLikeOption(arguments[index]) {
                    parsed.values[option.name] = arguments[index]
                    index += 1
                } else {
                    throw UsageError(message: "Missing value for '\(option.label)'", option: option.name)
                }
            case .toggle, .flag:
                if let inlineValue {
                    throw UsageError(
                        message: "The option '--\(name)' does not take any value, but '\(inlineValue)' was specified.")
                }
                parsed.values[option.name] = negated ? "false" : "true"
            }
        }
        return .run(parsed)
    }

    /// The option `name` names, and whether it is a toggle's `no-` form.
    private static func option(named name: String, in options: [DaemonOption]) -> (DaemonOption, negated: Bool)? {
        if let option = options.first(where: { $0.name == name }) { return (option, false) }
        if name.hasPrefix("no-"), let option = options.first(where: { $0.name == name.dropFirst(3) }),
            case .toggle = option.kind
        {
            return (option, true)
        }
        return nil
    }

    /// A word that the parser reads as an option, not as a value: it starts with `-` and is longer than that.
    private static func looksLikeOption(_ argument: String) -> Bool {
        argument.hasPrefix("-") && argument.count > 1
    }

    /// ` (did you mean '--port'?)` for a near miss, else nothing.
    private static func suggestion(for name: String, in options: [DaemonOption]) -> String {
        let names = options.flatMap { option -> [String] in
            if case .toggle = option.kind { return [option.name, "no-" + option.name] }
            return [option.name]
        }
        guard let nearest = names.min(by: { editDistance(name, $0) < editDistance(name, $1) }),
            editDistance(name, nearest) <= 2
        else { return "" }
        return " (did you mean '--\(nearest)'?)"
    }
}

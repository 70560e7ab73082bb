// Where each setting comes from: a flag, else `KVOD_<NAME>` in the environment, else the config file's "<name>" key,
// else the default (docs/CONFIGURATION.md). Every value is parsed here, and a bad one is an error that names its
// source. What the settings are and mean is Configuration.swift.
import WireProtocol

/// Where a setting's value came from.
enum SettingSource: Equatable, CustomStringConvertible {
    /// A command-line flag, e.g. `--port`.
    case flag(String)
    /// An environment variable, e.g. `KVOD_PORT`.
    case environment(String)
    /// A key of the config file.
    case file(path: String, key: String)
    /// Nothing set it.
    case defaultValue

    var description: String {
        switch self {
        case .flag(let name): name
        case .environment(let name): name
        case .file(let path, let key): "\(path): \"\(key)\""
        case .defaultValue: "default"
        }
    }
}

/// A setting's value before parsing: text from a flag or the environment, JSON from the config file.
enum RawSetting {
    case text(String)
    case json(JSONValue)
}

/// A value that does not fit its setting; the message says what was expected and what came.
struct SettingError: Error {
    let message: String
}

/// A configuration that cannot be used, with a message for people that names the source at fault.
struct ConfigurationError: Error, CustomStringConvertible {
    let message: String
    var description: String { self.message }
}

/// The optional config file: a JSON object whose keys are long option names.
struct ConfigFile {
    let path: String
    let values: JSONObject

    /// Reads and parses the file at `path`.
    init(path: String) throws(ConfigurationError) {
        self.path = path
        guard let data = POSIX.readFile(path) else {
            throw ConfigurationError(message: "config file \(path): cannot be read")
        }
        let value: JSONValue
        do {
            value = try JSONParser.parse(data)
        } catch {
            throw ConfigurationError(message: "config file \(path): not valid JSON: \(error)")
        }
        guard case .object(let object) = value else {
            throw ConfigurationError(
                message: "config file \(path): expected a JSON object of options, like {\"port\": 7070}")
        }
        self.values = object
    }

    /// The directory relative paths in the file are resolved against.
    var directory: String { POSIX.directory(of: self.path) }
}

/// Looks settings up through the layers, remembering what it found for `--print-config` and which file keys it
/// consulted, so any other key in the file is reported as unknown.
struct SettingLayers {
    /// The command line's values by option name (a toggle's is "true" or "false").
    let flags: [String: String]
    let environment: [String: String]
    let file: ConfigFile?
    /// Every setting looked up, in order: its name, its value as shown to people, and its source.
    private(set) var resolved: [(name: String, value: String, source: SettingSource)] = []
    private var consulted: Set<String> = []

    init(flags: [String: String], environment: [String: String], file: ConfigFile?) {
        self.flags = flags
        self.environment = environment
        self.file = file
    }

    /// `KVOD_` and the name in capitals with `_` for `-`: `max-line-bytes` → `KVOD_MAX_LINE_BYTES`.
    static func environmentName(_ name: String) -> String {
        "KVOD_" + String(name.uppercased().map { $0 == "-" ? "_" : $0 })
    }

    /// A non-empty environment variable (an empty one counts as unset).
    func environmentValue(_ name: String) -> String? {
        guard let value = self.environment[name], !value.isEmpty else { return nil }
        return value
    }

    /// The setting `name`: its flag if given, else its environment variable, else the file's key, else
    /// `defaultValue`. `parse` turns the raw value into the setting's type; its error is reported with the source.
    mutating func value<Value>(
        _ name: String, default defaultValue: Value, show: (Value) -> String = { "\($0)" },
        parse: (RawSetting) throws(SettingError) -> Value
    ) throws(ConfigurationError) -> Value {
        guard let (raw, source) = self.lookUp(name) else {
            self.resolved.append((name, show(defaultValue), .defaultValue))
            return defaultValue
        }
        do {
            let value = try parse(raw)
            self.resolved.append((name, show(value), source))
            return value
        } catch {
            throw ConfigurationError(message: "\(source): \(error.message)")
        }
    }

    /// An optional setting with no default (a file, a port to open).
    mutating func optionalValue<Value>(
        _ name: String, show: (Value) -> String = { "\($0)" },
        parse: (RawSetting) throws(SettingError) -> Value
    ) throws(ConfigurationError) -> Value? {
        try self.value(name, default: nil, show: { $0.map(show) ?? "(none)" }) { raw throws(SettingError) in
            try parse(raw)
        }
    }

    /// An optional path: like `optionalValue`, but a relative path from the config file is taken relative to the
    /// file's directory (from a flag or the environment, relative to the working directory, as usual).
    mutating func path(_ name: String) throws(ConfigurationError) -> String? {
        let fileDirectory = self.file?.directory
        let source = self.lookUp(name)?.source
        return try self.optionalValue(name) { raw throws(SettingError) in
            let path = try SettingParser.string(raw)
            guard !path.isEmpty else { throw SettingError(message: "expected a path, got an empty string") }
            if case .file? = source, let fileDirectory, !path.hasPrefix("/"), !fileDirectory.isEmpty {
                return POSIX.join(fileDirectory, path)
            }
            return path
        }
    }

    /// The raw value and its source, from the first layer that has one.
    private mutating func lookUp(_ name: String) -> (raw: RawSetting, source: SettingSource)? {
        self.consulted.insert(name)
        if let flag = self.flags[name] { return (.text(flag), .flag("--\(name)")) }
        let environmentName = Self.environmentName(name)
        if let text = self.environmentValue(environmentName) { return (.text(text), .environment(environmentName)) }
        if let file = self.file, let value = file.values[name] { return (.json(value), .file(path: file.path, key: name)) }
        return nil
    }

    /// Throws for the first key of the config file that no setting consulted (a typo, or an option kvod lacks).
    func rejectUnknownFileKeys() throws(ConfigurationError) {
        guard let file = self.file else { return }
        for key in file.values.keys where !self.consulted.contains(key) {
            var message = "config file \(file.path): unknown key \"\(key)\""
            if let suggestion = self.consulted.min(by: { editDistance(key, $0) < editDistance(key, $1) }),
                editDistance(key, suggestion) <= 3
            {
                message += " (did you mean \"\(suggestion)\"?)"
            }
            throw ConfigurationError(message: message + "; the keys are the long option names of kvod --help")
        }
    }
}

/// Parsers for the kinds of settings kvod has. Text comes from flags and the environment; JSON from the file.
enum SettingParser {
    static func string(_ raw: RawSetting) throws(SettingError) -> String {
        switch raw {
        case .text(let text), .json(.string(let text)): return text
        case .json(let value): throw SettingError(message: "expected a string, got \(JSONWriter.encodeString(value))")
        }
    }

    /// An integer in `range`: a JSON integer in the file, decimal digits in text.
    static func integer(in range: ClosedRange<Int>) -> (RawSetting) throws(SettingError) -> Int {
        { raw throws(SettingError) in
            let number: Int?
            let shown: String
            switch raw {
            case .text(let text):
                number = Int(String(text.drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" }.reversed()))
                shown = "'\(text)'"
            case .json(let value):
                number = value.intValue.flatMap { Int(exactly: $0) }
                shown = JSONWriter.encodeString(value)
            }
            guard let number, range.contains(number) else {
                let upper = range.upperBound == Int.max ? "" : " to \(range.upperBound)"
                let expected = range.upperBound == Int.max ? "\(range.lowerBound) or more" : "\(range.lowerBound)\(upper)"
                throw SettingError(message: "expected an integer from \(expected), got \(shown)")
            }
            return number
        }
    }

    /// One of `choices`.
    static func choice(_ choices: [String]) -> (RawSetting) throws(SettingError) -> String {
        { raw throws(SettingError) in
            let text = try Self.string(raw)
            guard choices.contains(text) else {
                throw SettingError(
                    message: "expected one of \(choices.joined(separator: ", ")), got '\(text)'")
            }
            return text
        }
    }

    /// A Boolean: JSON true/false in the file; true, false, 1, 0, yes, no, on, off in text.
    static func bool(_ raw: RawSetting) throws(SettingError) -> Bool {
        switch raw {
        case .json(.bool(let value)): return value
        case .text(let text):
            switch text.lowercased() {
            case "true", "1", "yes", "on": return true
            case "false", "0", "no", "off": return false
            default: throw SettingError(message: "expected true or false, got '\(text)'")
            }
        case .json(let value): throw SettingError(message: "expected true or false, got \(JSONWriter.encodeString(value))")
        }
    }
}

/// The Levenshtein distance between two short strings (for "did you mean").
func editDistance(_ left: String, _ right: String) -> Int {
    let left = Array(left)
    let right = Array(right)
    var previous = Array(0...right.count)
    for (i, leftCharacter) in left.enumerated() {
        var current = [i + 1]
        for (j, rightCharacter) in right.enumerated() {
            current.append(min(previous[j + 1] + 1, current[j] + 1, previous[j] + (leftCharacter == rightCharacter ? 0 : 1)))
        }
        previous = current
    }
    return previous[right.count]
}

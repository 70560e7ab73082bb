// MATCHES' regular expressions: the common subset of ICU's syntax, parsed to a tree, sized, then compiled to
// PatternMatcher's NFA program. What a linear-time matcher cannot do (backreferences, lookaround, possessive
// quantifiers, atomic groups) and what is left out for now (flags, `\b`, `\p{…}`, class set operations, POSIX
// classes) is a syntax error with the offset it starts at, never a silently different meaning.
//
//   alternation  a|b          sequence    ab           group   (…) (?:…)
//   any          .  (not a line terminator)             anchors ^ $ (at the text's start; its end, or before a
//   classes      [abc] [a-z] [^…] \d \D \w \W \s \S                  final line terminator)
//   repetition   * + ? {m} {m,} {m,n} (counts up to 1000), each optionally followed by ? (lazy: the same for a
//                whole-string match)
//   escapes      \n \t \r \f \a \e \uhhhh \x{h…} \xhh, and a backslash before any ASCII punctuation or non-ASCII
//                Character for that Character itself

/// A parsed regular expression.
indirect enum RegexNode {
    case empty
    /// Literal Characters in sequence (one written Character may fold to several, or none).
    case literal([Character])
    case any
    case characterClass(CharacterClass)
    case start
    case end
    case sequence([RegexNode])
    case alternation([RegexNode])
    case repetition(RegexNode, min: Int, max: Int?)
}

extension PatternProgram {
    /// The deepest group nesting a regular expression may have.
    static let maxGroupDepth = 32
    /// The largest count of a `{m,n}` repetition.
    static let maxRepetition = 1000

    /// Compiles a regular expression that must match the whole text (MATCHES). Literals are folded with
    /// `options`; with `[c]`, classes also match the uppercase form of a (lowercased) text Character.
    init(regex pattern: String, options: Predicate.Options) throws(PatternError) {
        let characters = Array(pattern)
        if characters.count > Self.maxPatternLength {
            throw PatternError(offset: Self.maxPatternLength, message: "pattern longer than \(Self.maxPatternLength) characters")
        }
        var parser = RegexParser(characters: characters, options: options)
        let tree = try parser.parse()
        if tree.size + 1 > Self.maxInstructions {
            throw PatternError(offset: 0, message: "regular expression too large (limit \(Self.maxInstructions) states)")
        }
        var instructions: [Instruction] = []
        instructions.reserveCapacity(tree.size + 1)
        tree.emit(into: &instructions)
        instructions.append(.match)
        self.instructions = instructions
        self.options = options
    }
}

extension RegexNode {
    /// How many instructions `emit` makes, saturating above the limit (so that `{1000}` of `{1000}` is cheap to
    /// refuse).
    var size: Int {
        let limit = PatternProgram.maxInstructions + 1
        switch self {
        case .empty: return 0
        case .literal(let characters): return Swift.min(characters.count, limit)
        case .any, .characterClass, .start, .end: return 1
        case .sequence(let nodes): return Swift.min(nodes.reduce(0) { Swift.min($0 + $1.size, limit) }, limit)
        case .alternation(let nodes):
            return Swift.min(nodes.reduce(2 * (nodes.count - 1)) { Swift.min($0 + $1.size, limit) }, limit)
        case .repetition(let node, let min, let max):
            let size = node.size
            guard let max else { return Swift.min(min == 0 ? size + 2 : min * size + 1, limit) }
            return Swift.min(min * size + (max - min) * (size + 1), limit)
        }
    }

    /// Appends the node's instructions; control continues after the last one.
    func emit(into program: inout [PatternProgram.Instruction]) {
        switch self {
        case .empty:
            return
        case .literal(let characters):
            for character in characters { program.append(.character(character)) }
        case .any:
            program.append(.anyButLineTerminator)
        case .characterClass(let characterClass):
            program.append(.characterClass(characterClass))
        case .start:
            program.append(.assertStart)
        case .end:
            program.append(.assertEnd)
        case .sequence(let nodes):
            for node in nodes { node.emit(into: &program) }
        case .alternation(let nodes):
            var jumps: [Int] = []
            for (index, node) in nodes.enumerated() {
                guard index < nodes.count - 1 else {
                    node.emit(into: &program)
                    break
                }
                let split = program.count
                program.append(.split(0, 0))
                node.emit(into: &program)
                jumps.append(program.count)
                program.append(.jump(0))
                program[split] = .split(split + 1, program.count)
            }
            for jump in jumps { program[jump] = .jump(program.count) }
        case .repetition(let node, let min, let max):
            if let max {
                for _ in 0..<min { node.emit(into: &program) }
                var splits: [Int] = []
                for _ in min..<max {
                    splits.append(program.count)
                    program.append(.split(0, 0))
                    node.emit(into: &program)
                }
                for split in splits { program[split] = .split(split + 1, program.count) }
            } else if min == 0 {
                let loop = program.count
                program.append(.split(0, 0))
                node.emit(into: &program)
                program.append(.jump(loop))
                program[loop] = .split(loop + 1, program.count)
            } else {
                for _ in 0..<(min - 1) { node.emit(into: &program) }
                let start = program.count
                node.emit(into: &program)
                program.append(.split(start, program.count + 1))
            }
        }
    }
}

/// A recursive-descent parser of the regular expression subset (grammar at the top of this file).
struct RegexParser {
    private let characters: [Character]
    private let options: Predicate.Options
    private var position = 0
    private var depth = 0

    init(characters: [Character], options: Predicate.Options) {
        self.characters = characters
        self.options = options
    }

    mutating func parse() throws(PatternError) -> RegexNode {
        let tree = try self.alternation()
        if self.position < self.characters.count {  // only a ')' stops an alternation early
            throw PatternError(offset: self.position, message: "unmatched ')'")
        }
        return tree
    }

    private func peek(_ ahead: Int = 0) -> Character? {
        let index = self.position + ahead
        return index < self.characters.count ? self.characters[index] : nil
    }

    private mutating func alternation() throws(PatternError) -> RegexNode {
        var branches = [try self.sequence()]
        while self.peek() == "|" {
            self.position += 1
            branches.append(try self.sequence())
        }
        return branches.count == 1 ? branches[0] : .alternation(branches)
    }

    private mutating func sequence() throws(PatternError) -> RegexNode {
        var items: [RegexNode] = []
        while let character = self.peek(), character != "|", character != ")" {
            items.append(try self.repetition())
        }
        return items.isEmpty ? .empty : items.count == 1 ? items[0] : .sequence(items)
    }

    private mutating func repetition() throws(PatternError) -> RegexNode {
        let atom = try self.atom()
        let start = self.position
        guard let (min, max) = try self.quantifier() else { return atom }
        if self.peek() == "?" { self.position += 1 }  // lazy: the same set of whole-string matches
        if self.peek() == "+" {
            throw PatternError(offset: self.position, message: "possessive quantifiers are not supported")
        }
        let afterQuantifier = self.position
        if try self.quantifier() != nil {
            throw PatternError(
                offset: afterQuantifier, message: "a quantifier cannot follow another; group the repeated part in (…)")
        }
        if case .start = atom { throw PatternError(offset: start, message: "nothing to repeat before '\(self.characters[start])'") }
        if case .end = atom { throw PatternError(offset: start, message: "nothing to repeat before '\(self.characters[start])'") }
        return .repetition(atom, min: min, max: max)
    }

    /// Reads `*`, `+`, `?` or `{m}`, `{m,}`, `{m,n}` if one comes next.
    private mutating func quantifier() throws(PatternError) -> (Int, Int?)? {
        switch self.peek() {
        case "*": self.position += 1; return (0, nil)
        case "+": self.position += 1; return (1, nil)
        case "?": self.position += 1; return (0, 1)
        case "{": break
        default: return nil
        }
        let start = self.position
        self.position += 1
        let malformed = PatternError(offset: start, message: "expected {m}, {m,} or {m,n} after '{'")
        guard let min = try self.count(at: start) else { throw malformed }
        var max: Int? = min
        if self.peek() == "," {
            self.position += 1
            max = try self.count(at: start)
        }
        guard self.peek() == "}" else { throw malformed }
        self.position += 1
        if let max, max < min {
            throw PatternError(offset: start, message: "repetition {\(min),\(max)} has its bounds out of order")
        }
        return (min, max)
    }

    private mutating func count(at start: Int) throws(PatternError) -> Int? {
        var value: Int?
        while let character = self.peek(), character.isASCII, let digit = character.wholeNumberValue {
            value = (value ?? 0) * 10 + digit
            self.position += 1
            if let current = value, current > PatternProgram.maxRepetition {
                throw PatternError(offset: start, message: "repetition count above \(PatternProgram.maxRepetition)")
            }
        }
        return value
    }

    private mutating func atom() throws(PatternError) -> RegexNode {
        let start = self.position
        guard let character = self.peek() else { return .empty }
        self.position += 1
        switch character {
        case "(":
            if self.peek() == "?" {
                guard self.peek(1) == ":" else {
                    throw PatternError(offset: start, message: "unsupported group '(?'; only (…) and (?:…) are")
                }
                self.position += 2
            }
            self.depth += 1
            if self.depth > PatternProgram.maxGroupDepth {
                throw PatternError(offset: start, message: "groups nested too deeply (limit \(PatternProgram.maxGroupDepth))")
            }
            let inner = try self.alternation()
            guard self.peek() == ")" else { throw PatternError(offset: start, message: "missing ')'") }
            self.position += 1
            self.depth -= 1
            return inner
        case "[": return .characterClass(try self.characterClass(at: start))
        case ".": return .any
        case "^": return .start
        case "$": return .end
        case "\\":
            switch try self.escape(at: start) {
            case .character(let literal): return self.literal(literal)
            case let item: return .characterClass(CharacterClass(items: [item], isNegated: false))
            }
        case "*", "+", "?", "{":
            throw PatternError(offset: start, message: "nothing to repeat before '\(character)'")
        default:
            return self.literal(character)
        }
    }

    private func literal(_ character: Character) -> RegexNode {
        .literal(Array(PredicateFolding.fold(String(character), self.options)))
    }

    /// Reads an escape whose backslash is at `start` (the position is just after it).
    private mutating func escape(at start: Int) throws(PatternError) -> CharacterClass.Item {
        guard let code = self.peek() else { throw PatternError(offset: start, message: "trailing backslash") }
        self.position += 1
        switch code {
        case "d", "D": return .digit(isNegated: code == "D")
        case "w", "W": return .word(isNegated: code == "W")
        case "s", "S": return .space(isNegated: code == "S")
        case "n": return .character("\n")
        case "t": return .character("\t")
        case "r": return .character("\r")
        case "f": return .character("\u{0C}")
        case "a": return .character("\u{07}")
        case "e": return .character("\u{1B}")
        case "u", "x": return .character(Character(try self.hexEscape(code, at: start)))
        default:
            if code.isASCII, code.isLetter || code.isNumber {
                let what = code.isNumber ? "backreferences and octal escapes are" : "the escape '\\\(code)' is"
                throw PatternError(offset: start, message: "\(what) not supported")
            }
            return .character(code)
        }
    }

    /// `\uhhhh`, `\xhh` or `\x{h…}` (the position is after the `u` or `x`).
    private mutating func hexEscape(_ code: Character, at start: Int) throws(PatternError) -> Unicode.Scalar {
        let braced = code == "x" && self.peek() == "{"
        if braced { self.position += 1 }
        let limit = braced ? 8 : code == "u" ? 4 : 2
        var value: UInt32 = 0
        var digits = 0
        while digits < limit, let character = self.peek(), character.isASCII, let nibble = character.hexDigitValue {
            value = value << 4 | UInt32(nibble)
            digits += 1
            self.position += 1
        }
        if braced {
            guard digits > 0, self.peek() == "}" else {
                throw PatternError(offset: start, message: "expected hex digits and '}' after '\\x{'")
            }
            self.position += 1
        } else if digits != limit {
            throw PatternError(offset: start, message: "expected \(limit) hex digits after '\\\(code)'")
        }
        guard let scalar = Unicode.Scalar(value) else {
            throw PatternError(offset: start, message: "the escape is not a Unicode scalar")
        }
        return scalar
    }

    /// Reads a class whose `[` is at `start` (the position is just after it).
    private mutating func characterClass(at start: Int) throws(PatternError) -> CharacterClass {
        var result = CharacterClass(items: [], isNegated: false)
        if self.peek() == "^" {
            result.isNegated = true
            self.position += 1
        }
        if self.peek() == "]" { throw PatternError(offset: self.position, message: "empty character class") }
        while true {
            let itemStart = self.position
            guard let character = self.peek() else { throw PatternError(offset: start, message: "missing ']'") }
            self.position += 1
            let item: CharacterClass.Item
            switch character {
            case "]":
                return result
            case "[":
                throw PatternError(offset: itemStart, message: "nested classes and POSIX classes are not supported")
            case "&" where self.peek() == "&":
                throw PatternError(offset: itemStart, message: "class set operations are not supported")
            case "\\":
                item = try self.escape(at: itemStart)
            default:
                item = .character(character)
            }
            guard case .character(let low) = item, self.peek() == "-", let after = self.peek(1), after != "]" else {
                result.items.append(self.folded(item))
                continue
            }
            self.position += 1  // the '-'
            let highStart = self.position
            self.position += 1
            var highItem = CharacterClass.Item.character(after)
            if after == "\\" { highItem = try self.escape(at: highStart) }
            if after == "[" { throw PatternError(offset: highStart, message: "nested classes and POSIX classes are not supported") }
            guard case .character(let high) = highItem, let lowScalar = Self.singleScalar(low),
                let highScalar = Self.singleScalar(high)
            else {
                throw PatternError(offset: itemStart, message: "a range needs a single character at each end")
            }
            guard lowScalar <= highScalar else {
                throw PatternError(offset: itemStart, message: "range '\(low)-\(high)' is out of order")
            }
            result.items.append(.range(lowScalar, highScalar))
        }
    }

    /// A class member folded for `[d]` (the text is; `[c]` is handled when matching).
    private func folded(_ item: CharacterClass.Item) -> CharacterClass.Item {
        guard case .character(let character) = item, self.options.contains(.diacriticInsensitive) else { return item }
        let folded = PredicateFolding.fold(String(character), .diacriticInsensitive)
        guard folded.count == 1, let single = folded.first else { return item }
        return .character(single)
    }

    private static func singleScalar(_ character: Character) -> UInt32? {
        let scalars = character.unicodeScalars
        guard let scalar = scalars.first, scalars.count == 1 else { return nil }
        return scalar.value
    }
}

// LIKE and MATCHES without backtracking: a pattern compiles to a small program of Thompson NFA instructions, and
// matching simulates every thread at once (a Pike VM without captures), so a match costs O(instructions × text
// length) whatever the pattern: `(a*)*b` against 10,000 'a's is 10,000 steps, not 2^10,000. The regular expression
// syntax is in PatternMatcher+Regex.swift.

/// Why a LIKE or MATCHES pattern was refused: the 0-based Character offset in the pattern, and what is wrong.
struct PatternError: Error, Equatable {
    var offset: Int
    var message: String
}

/// A compiled LIKE or MATCHES pattern, matching whole strings.
struct PatternProgram: Sendable {
    /// The most instructions a pattern may compile to (each is one NFA state).
    static let maxInstructions = 4096
    /// The longest pattern text compiled, in Characters.
    static let maxPatternLength = 4096

    enum Instruction: Sendable {
        /// Consumes this Character.
        case character(Character)
        /// Consumes any Character (LIKE's `?` and `*`).
        case anyCharacter
        /// Consumes any Character but a line terminator (a regular expression's `.`).
        case anyButLineTerminator
        /// Consumes a Character of the class.
        case characterClass(CharacterClass)
        /// Continues at both targets.
        case split(Int, Int)
        /// Continues at the target.
        case jump(Int)
        /// `^`: holds at the start of the text.
        case assertStart
        /// `$`: holds at the end of the text, or before a line terminator that ends it.
        case assertEnd
        /// The whole text matched (when reached after its last Character).
        case match
    }

    var instructions: [Instruction]
    /// How the text is folded before matching (the pattern's literals were folded alike when compiled).
    var options: Predicate.Options

    /// Whether the whole of `text` matches.
    func matches(_ text: String) -> Bool {
        let characters = Array(PredicateFolding.fold(text, self.options))
        var current = ThreadList(capacity: self.instructions.count)
        var next = ThreadList(capacity: self.instructions.count)
        var stack: [Int] = []
        self.addClosure(of: 0, to: &current, at: 0, in: characters, stack: &stack)
        for (position, character) in characters.enumerated() {
            if current.states.isEmpty { return false }
            next.clear()
            for state in current.states where self.accepts(self.instructions[state], character) {
                self.addClosure(of: state + 1, to: &next, at: position + 1, in: characters, stack: &stack)
            }
            swap(&current, &next)
        }
        return current.states.contains { if case .match = self.instructions[$0] { true } else { false } }
    }

    /// Adds `state` and every state reachable from it without consuming a Character to `list`.
    private func addClosure(
        of state: Int, to list: inout ThreadList, at position: Int, in text: [Character], stack: inout [Int]
    ) {
        stack.append(state)
        while let state = stack.popLast() {
            guard list.mark(state) else { continue }
            switch self.instructions[state] {
            case .jump(let target):
                stack.append(target)
            case .split(let first, let second):
                stack.append(second)
                stack.append(first)
            case .assertStart:
                if position == 0 { stack.append(state + 1) }
            case .assertEnd:
                if position == text.count || (position == text.count - 1 && Self.isLineTerminator(text[position])) {
                    stack.append(state + 1)
                }
            case .character, .anyCharacter, .anyButLineTerminator, .characterClass, .match:
                list.states.append(state)
            }
        }
    }

    private func accepts(_ instruction: Instruction, _ character: Character) -> Bool {
        switch instruction {
        case .character(let expected): expected == character
        case .anyCharacter: true
        case .anyButLineTerminator: !Self.isLineTerminator(character)
        case .characterClass(let characterClass):
            characterClass.contains(character, caseInsensitive: self.options.contains(.caseInsensitive))
        case .split, .jump, .assertStart, .assertEnd, .match: false
        }
    }

    /// ICU's line terminators: LF, VT, FF, CR (and CR LF), NEL, LS, PS.
    static func isLineTerminator(_ character: Character) -> Bool {
        switch character {
        case "\n", "\r", "\r\n", "\u{0B}", "\u{0C}", "\u{85}", "\u{2028}", "\u{2029}": true
        default: false
        }
    }
}

/// The states of the threads alive at one position, without repeats.
private struct ThreadList {
    var states: [Int] = []
    private var marks: [UInt32]
    private var generation: UInt32 = 1

    init(capacity: Int) {
        self.marks = Array(repeating: 0, count: capacity)
        self.states.reserveCapacity(capacity)
    }

    /// Empties the list (in O(1): marks of older generations no longer count).
    mutating func clear() {
        self.states.removeAll(keepingCapacity: true)
        if self.generation == UInt32.max {
            for index in self.marks.indices { self.marks[index] = 0 }
            self.generation = 0
        }
        self.generation += 1
    }

    /// Marks `state` as visited; false if it already was.
    mutating func mark(_ state: Int) -> Bool {
        if self.marks[state] == self.generation { return false }
        self.marks[state] = self.generation
        return true
    }
}

// MARK: - LIKE

extension PatternProgram {
    /// Compiles a LIKE pattern: `*` matches any run of Characters (empty too), `?` exactly one, a backslash makes
    /// the next Character literal (`\*`, `\?`, `\\`; a final backslash is itself), anything else matches itself.
    /// Literals are folded with `options`, as the text will be.
    init(like pattern: String, options: Predicate.Options) throws(PatternError) {
        let characters = Array(PredicateFolding.fold(pattern, options))
        if characters.count > Self.maxPatternLength {
            throw PatternError(offset: Self.maxPatternLength, message: "pattern longer than \(Self.maxPatternLength) characters")
        }
        var instructions: [Instruction] = []
        var index = 0
        while index < characters.count {
            let character = characters[index]
            index += 1
            switch character {
            case "*":
                if case .jump? = instructions.last { continue }  // `**` is `*`
                let loop = instructions.count
                instructions.append(.split(loop + 1, loop + 3))
                instructions.append(.anyCharacter)
                instructions.append(.jump(loop))
            case "?":
                instructions.append(.anyCharacter)
            case "\\" where index < characters.count:
                instructions.append(.character(characters[index]))
                index += 1
            default:
                instructions.append(.character(character))
            }
            if instructions.count >= Self.maxInstructions {
                throw PatternError(offset: index - 1, message: "pattern too large (limit \(Self.maxInstructions) states)")
            }
        }
        instructions.append(.match)
        self.instructions = instructions
        self.options = options
    }
}

// MARK: - Character classes

/// A regular expression's `[…]`, `\d`, `\w`, `\s` (and negations).
struct CharacterClass: Sendable {
    enum Item: Sendable {
        case character(Character)
        /// An inclusive range of Unicode scalar values (a Character of one scalar in it matches).
        case range(UInt32, UInt32)
        case digit(isNegated: Bool)
        case word(isNegated: Bool)
        case space(isNegated: Bool)
    }

    var items: [Item]
    var isNegated: Bool

    /// Whether `character` is in the class. Case-insensitively, the text was lowercased: its uppercase form counts.
    func contains(_ character: Character, caseInsensitive: Bool) -> Bool {
        var found = self.items.contains { $0.contains(character) }
        if !found, caseInsensitive {
            let upper = character.uppercased()
            if upper.count == 1, let other = upper.first, other != character {
                found = self.items.contains { $0.contains(other) }
            }
        }
        return found != self.isNegated
    }
}

extension CharacterClass.Item {
    func contains(_ character: Character) -> Bool {
        switch self {
        case .character(let member):
            return member == character
        case .range(let low, let high):
            let scalars = character.unicodeScalars
            guard let scalar = scalars.first, scalars.count == 1 else { return false }
            return low <= scalar.value && scalar.value <= high
        case .digit(let isNegated):
            return Self.isDigit(character) != isNegated
        case .word(let isNegated):
            return Self.isWord(character) != isNegated
        case .space(let isNegated):
            return Self.isSpace(character) != isNegated
        }
    }

    /// `\d`: a decimal digit of any script (general category Nd), judged by the Character's first scalar.
    static func isDigit(_ character: Character) -> Bool {
        guard let scalar = character.unicodeScalars.first else { return false }
        return scalar.properties.generalCategory == .decimalNumber
    }

    /// `\w` (ICU's): alphabetic, a mark, a decimal digit, connector punctuation (`_`), ZWNJ or ZWJ.
    static func isWord(_ character: Character) -> Bool {
        guard let scalar = character.unicodeScalars.first else { return false }
        if scalar.properties.isAlphabetic || scalar.value == 0x200C || scalar.value == 0x200D { return true }
        switch scalar.properties.generalCategory {
        case .decimalNumber, .nonspacingMark, .spacingMark, .enclosingMark, .connectorPunctuation: return true
        default: return false
        }
    }

    /// `\s`: white space (the Unicode White_Space property).
    static func isSpace(_ character: Character) -> Bool {
        character.unicodeScalars.first?.properties.isWhitespace ?? false
    }
}

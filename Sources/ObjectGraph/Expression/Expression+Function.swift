// The built-in functions of the expression language: their names and arities, checked when parsing. What each one
// computes is in Expression+Functions.swift.

extension Expression {
    /// A built-in function; the raw value is its name in expression text.
    ///
    /// Numeric functions accept ints and doubles and return a double unless noted; a null or non-number argument, a
    /// domain error or a non-finite result gives null.
    public enum Function: String, Sendable, CaseIterable {
        /// `pow(x, y)`: x to the power y.
        case pow
        /// `cbrt(x)`: the cube root (of negative x too); exact for exact cubes.
        case cbrt
        /// `sqrt(x)`: the square root; null for negative x.
        case sqrt
        /// `exp(x)`: e to the power x.
        case exp
        /// `log(x)`: the natural logarithm; null for x ≤ 0.
        case log
        /// `sin(x)`, radians.
        case sin
        /// `cos(x)`, radians.
        case cos
        /// `tan(x)`, radians.
        case tan
        /// `atan2(y, x)`: the angle of the point (x, y), in radians.
        case atan2
        /// `abs(x)`: the magnitude; an int stays an int (double on overflow).
        case abs
        /// `min(a, b, ...)`: the smallest argument; an int if all arguments are ints.
        case min
        /// `max(a, b, ...)`: the largest argument; an int if all arguments are ints.
        case max
        /// `round(x)`: to the nearest integer, half away from zero; an int when it fits Int64.
        /// `round(x, digits)`: to `digits` decimal places (negative: tens, hundreds, ...), correctly rounded from the
        /// exact value of x, half away from zero; a double.
        case round
        /// `floor(x)`: the largest integer ≤ x; an int when it fits Int64.
        case floor
        /// `ceil(x)`: the smallest integer ≥ x; an int when it fits Int64.
        case ceil
        /// `clamp(x, lo, hi)`: x limited to lo...hi; an int if all arguments are ints; null when lo > hi.
        case clamp
        /// `int(x)`: an int; truncates doubles, parses numeric strings; null otherwise or when out of range.
        case int
        /// `double(x)`: a double from an int, a double or a numeric string; null otherwise.
        case double
        /// `string(x)`: the string form used by `+` (null gives ""); null for arrays and objects.
        case string
        /// `len(x)`: the number of characters of a string or elements of an array, as an int.
        case len
        /// `upper(s)`: the string in upper case.
        case upper
        /// `lower(s)`: the string in lower case.
        case lower
        /// `trim(s)`: the string without leading and trailing whitespace.
        case trim
        /// `hex(n, width)`: upper-case hexadecimal of an integer n ≥ 0, zero-padded to width (0...64).
        case hex
        /// `format(fmt, args...)`: printf-like formatting (`%d %s %f %.Nf %x %X %%`, widths); see README.md.
        case format

        /// The fewest arguments the function takes.
        public var minimumArity: Int {
            switch self {
            case .pow, .atan2, .hex: 2
            case .clamp: 3
            default: 1
            }
        }

        /// The most arguments the function takes, nil for no limit.
        public var maximumArity: Int? {
            switch self {
            case .min, .max, .format: nil
            case .round: 2
            default: self.minimumArity
            }
        }

        /// The arity rule as a message, e.g. "'pow' takes 2 arguments".
        var arityMessage: String {
            let name = "'\(self.rawValue)'"
            switch (self.minimumArity, self.maximumArity) {
            case (1, 1): return "\(name) takes 1 argument"
            case (let minimum, nil): return "\(name) takes at least \(minimum) argument\(minimum == 1 ? "" : "s")"
            case (let minimum, let maximum?) where minimum == maximum: return "\(name) takes \(minimum) arguments"
            case (let minimum, let maximum?): return "\(name) takes \(minimum) or \(maximum) arguments"
            }
        }
    }
}

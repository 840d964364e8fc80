/// An option declared once with the type of its value: the command reads it through this
/// declaration, which converts and checks the text, and lists its `option` for the parser,
/// `--help`, the man page and the completions.
///
/// ```swift
/// @Value(Option.integer("--limit", in: 1...1000, help: "At most N uploads.").defaulting(to: 100))
/// var limit: Int  // from 1 to 1000, 100 when not given
/// @Value(Option.flag("--all", help: "Every upload.")) var all: Bool
/// ```
///
/// (or read directly: `try arguments[limit]`).
///
/// A value it can't take is one usage error, exit 2: `--limit must be a whole number from 1 to
/// 1000, not '5000'` (with `(from JOTTER_…)` when it came from the environment).
package struct TypedOption<Value>: Sendable {
    /// What the parser, the help, the man page and the completions see.
    package private(set) var option: Option
    let read: @Sendable (Arguments) throws(UsageError) -> Value

    init(_ option: Option, read: @escaping @Sendable (Arguments) throws(UsageError) -> Value) {
        self.option = option
        self.read = read
    }

    /// This option with `fallback` when it is not given (and its help says `default …`: `shown`,
    /// or `fallback` as text).
    package func defaulting<Wrapped>(to fallback: Wrapped, shown: String? = nil) -> TypedOption<Wrapped>
    where Value == Wrapped?, Wrapped: Sendable {
        let read = self.read
        var option = option
        option.defaultValue = shown ?? "\(fallback)"
        return TypedOption<Wrapped>(option) { arguments throws(UsageError) in try read(arguments) ?? fallback }
    }

    /// This option, which must be given: `missing` is the usage error when it is not, and the
    /// usage line shows it without brackets (`--data DIR`).
    package func required<Wrapped>(missing: String) -> TypedOption<Wrapped> where Value == Wrapped?, Wrapped: Sendable {
        let read = self.read
        var option = option
        option.shown = .required
        return TypedOption<Wrapped>(option) { arguments throws(UsageError) in
            guard let value = try read(arguments) else { throw UsageError(missing) }
            return value
        }
    }

    /// This option with its value made into another by `transform`, which may refuse it
    /// with a usage error (`-H` takes `'Name: value'`).
    package func map<Other>(_ transform: @escaping @Sendable (Value) throws(UsageError) -> Other) -> TypedOption<Other> {
        let read = self.read
        return TypedOption<Other>(option) { arguments throws(UsageError) in try transform(try read(arguments)) }
    }

    /// This repeatable option with each of its values checked by `accepts`: the first it refuses
    /// is the usage error that the option must be `expected` (`(from JOTTER_…)` as for any value).
    package func each(expected: String, _ accepts: @escaping @Sendable (String) -> Bool) -> TypedOption where Value == [String] {
        let read = self.read
        let option = option
        return TypedOption(option) { arguments throws(UsageError) in
            let values = try read(arguments)
            if let refused = values.first(where: { !accepts($0) }) { throw arguments.invalid(option, refused, expected: expected) }
            return values
        }
    }

    /// This option shown without brackets in the usage line (`--data DIR`), yet read as one that
    /// may be missing: for a command whose forms need it in one and refuse it in another, which
    /// its `validate(_:)` says.
    package func shownRequired() -> TypedOption {
        var copy = self
        copy.option.shown = .required
        return copy
    }

    /// This option shown within `[options]` in the usage lines: one every client command takes.
    package func common() -> TypedOption {
        var copy = self
        copy.option.shown = .common
        return copy
    }

    /// This option, shown in the usage line as the alternative to the one declared before it:
    /// `[--limit N | --all]`.
    package func alternative() -> TypedOption {
        var copy = self
        copy.option.shown = .alternative
        return copy
    }
}

extension Option {
    /// A flag: true when given, or when its variable is `1`, `true` or `yes`.
    package static func flag(_ names: String..., environment: String? = nil, help: String) -> TypedOption<Bool> {
        let option = Option(names, environment: environment, help: help)
        return TypedOption(option) { $0.flag(option) }
    }

    /// A value taken as it is: a name, a path, a URL. `default` is what the help says is used
    /// when it is not given.
    package static func text(
        _ names: String..., value: String, environment: String? = nil, default shown: String? = nil,
        help: String
    ) -> TypedOption<String?> {
        let option = Option(names, value: value, environment: environment, default: shown, help: help)
        return TypedOption(option) { $0.text(option) }
    }

    /// A repeatable value, every one kept in order (`-H a -H b`); when none is given, its
    /// variable's values separated by spaces.
    package static func list(_ names: String..., value: String, environment: String? = nil, help: String) -> TypedOption<[String]> {
        let option = Option(names, value: value, environment: environment, repeats: true, help: help)
        return TypedOption(option) { $0.values(option) }
    }

    /// A whole number in `range`. A bad one is said as `a whole number from 1 to 256`, `a
    /// positive whole number of days` (`unit`), `a port number from 0 to 65535` (`noun`).
    package static func integer(
        _ names: String..., value: String = "N", environment: String? = nil, default shown: String? = nil,
        in range: ClosedRange<Int> = 1...Int.max, noun: String = "whole number", unit: String? = nil,
        help: String
    ) -> TypedOption<Int?> {
        let option = Option(names, value: value, environment: environment, default: shown, help: help)
        var expected = noun + (unit.map { " of " + $0 } ?? "")
        switch (range.lowerBound, range.upperBound) {
        case (.min, .max): break
        case (1, .max): expected = "positive " + expected
        case (let low, .max): expected += ", \(low) or more"
        case (let low, let high): expected += " from \(low) to \(high)"
        }
        expected = ("aeiou".contains(expected.first ?? "a") ? "an " : "a ") + expected
        return parsed(option, expected: expected) { text in Int(text).flatMap { range.contains($0) ? $0 : nil } }
    }

    /// A size such as `1048576`, `512K` or `1MiB` (binary multiples), in bytes, at least `minimum`;
    /// `default` is shown in the help and in the error as the example.
    package static func size(
        _ names: String..., environment: String? = nil, default shown: String, minimum: Int = 0,
        help: String
    ) -> TypedOption<Int?> {
        let option = Option(names, value: "SIZE", environment: environment, default: shown, help: help)
        let expected = minimum > 0 ? "a size of \(minimum) byte\(minimum == 1 ? "" : "s") or more, such as \(shown)" : "a size such as \(shown)"
        return parsed(option, expected: expected) { parseSize($0).flatMap { $0 >= minimum ? $0 : nil } }
    }

    /// One of `choices` (case does not matter): its value in the help and the completions is
    /// their names (`newest|oldest|updated`); a bad one is said as `newest, oldest or updated`.
    package static func choice<Choice: Sendable>(
        _ names: String..., choices: [(name: String, value: Choice)],
        environment: String? = nil, default shown: String? = nil,
        help: String
    ) -> TypedOption<Choice?> {
        let words = choices.map(\.name)
        let option = Option(names, value: words.joined(separator: "|"), environment: environment, default: shown, help: help)
        let expected = words.count > 1 ? words.dropLast().joined(separator: ", ") + " or " + words.last! : words.joined()
        return parsed(option, expected: expected) { text in choices.first { $0.name == text.lowercased() }?.value }
    }

    /// A value `convert` reads, `nil` when it can't: said as `expected` (`a duration such as 12h`).
    package static func value<Value: Sendable>(
        _ names: String..., value: String, environment: String? = nil,
        default shown: String? = nil, expected: String,
        help: String, _ convert: @escaping @Sendable (String) -> Value?
    ) -> TypedOption<Value?> {
        parsed(Option(names, value: value, environment: environment, default: shown, help: help), expected: expected, convert)
    }

    private static func parsed<Value>(
        _ option: Option, expected: String,
        _ convert: @escaping @Sendable (String) -> Value?
    ) -> TypedOption<Value?> {
        TypedOption(option) { arguments throws(UsageError) in
            guard let text = arguments.text(option) else { return nil }
            guard let value = convert(text) else { throw arguments.invalid(option, text, expected: expected) }
            return value
        }
    }
}

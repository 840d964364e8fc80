import Testing
@testable import JotterCLI
@testable import JotterCLICore

/// Options shared by `Sample`: a group, read where it is declared.
private struct SampleGroup: ParsableArguments {
    @Value(Option.text("--name", value: "NAME", environment: "SAMPLE_NAME", help: "A name.")) var name: String?
    @Value(Option.flag("--loud", environment: "SAMPLE_LOUD", help: "Louder.")) var loud: Bool
    private(set) var greeting = ""

    mutating func validate(_ arguments: Arguments) throws {
        greeting = (name ?? "nobody") + (loud ? "!" : ".")
    }
}

private struct Sample: ParsableArguments {
    @Value(Option.integer("--limit", in: 1...10, help: "At most N.")) var limit: Int?
    @Group var group: SampleGroup
    @Value(Option.flag("--all", help: "Every one.")) var all: Bool
    @Operand(.single("ID")) var id: String
}

/// No operand: a positional argument is refused, after `validate`.
private struct Quiet: ParsableArguments {
    @Group(without: Option.flag("--loud", help: "Louder.")) var group: SampleGroup
    @Value(Option.integer("--count", help: "How many.").defaulting(to: 3)) var count: Int

    func validate(_ arguments: Arguments) throws {
        if count == 7 { throw UsageError("not seven") }
    }
}

@Suite("arguments declared once, as properties")
struct DeclaredArgumentsTests {
    static func parse<T: ParsableArguments>(_ type: T.Type, _ words: [String], environment: [String: String] = [:]) throws -> T {
        try T(parsing: Arguments(words, options: T.options(without: []), environment: environment))
    }

    @Test("the options are listed as declared, the command's own first, then its groups'; a group leaves out what it is told")
    func listing() {
        #expect(Sample.options(without: []).map(\.key) == ["--limit", "--all", "--name", "--loud"])
        #expect(Quiet.options(without: []).map(\.key) == ["--count", "--name"])
        #expect(NotesHistoryCommand.options.map(\.key) == ["--version", "--trash", "--server", "--json", "--token", "--cacert", "--insecure"])
        #expect(LoginCommand.options.map(\.key) == ["--name", "--server", "--token", "--cacert", "--insecure"])
        #expect(UsersListCommand.options.map(\.key) == ["--data", "--database", "--server", "--token", "--cacert", "--insecure", "--json"])
        #expect(Sample.options(without: ["--loud"]).map(\.key) == ["--limit", "--all", "--name"])
        #expect(NotesHistoryCommand.operandsUsage == "ID" && NotesListCommand.operandsUsage.isEmpty)
    }

    @Test("each declared property is filled from the arguments, a group's too, then validate")
    func filled() throws {
        let sample = try Self.parse(Sample.self, ["--limit", "4", "x", "--name", "Ada", "--loud"])
        #expect(sample.limit == 4 && !sample.all && sample.id == "x")
        #expect(sample.group.name == "Ada" && sample.group.loud && sample.group.greeting == "Ada!")
        let quiet = try Self.parse(Quiet.self, [], environment: ["SAMPLE_NAME": "Bo"])
        #expect(quiet.count == 3 && quiet.group.greeting == "Bo.")
        // A copy shares what was read.
        let copy = sample
        #expect(copy.group.greeting == "Ada!")
    }

    @Test("errors come in declaration order; with no operand declared, a positional argument is refused after validate")
    func errorOrder() throws {
        #expect(CLITests.message { try Self.parse(Sample.self, ["--limit", "11"]) } == "--limit must be a whole number from 1 to 10, not '11'")
        #expect(CLITests.message { try Self.parse(Sample.self, ["a", "b"]) } == "unexpected argument 'b'")
        #expect(CLITests.message { try Self.parse(Sample.self, []) } == "missing ID")
        #expect(CLITests.message { try Self.parse(Quiet.self, ["--count", "7", "extra"]) } == "not seven")
        #expect(CLITests.message { try Self.parse(Quiet.self, ["extra"]) } == "unexpected argument 'extra'")
    }

    @Test("an option a group leaves out is not accepted, and reads as not given, its variable ignored")
    func leftOut() throws {
        #expect(CLITests.message { try Self.parse(Quiet.self, ["--loud"]) } == "unknown option '--loud'")
        #expect(try !Self.parse(Quiet.self, [], environment: ["SAMPLE_LOUD": "1"]).group.loud)
        #expect(try Self.parse(Sample.self, ["x"], environment: ["SAMPLE_LOUD": "1"]).group.loud)
        #expect(
            CLITests.message { try LoginCommand(parsing: Arguments(["--json"], options: LoginCommand.options, environment: [:])) }
                == "unknown option '--json'")
    }
}

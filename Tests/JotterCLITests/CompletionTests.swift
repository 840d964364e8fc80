import Foundation
import Testing
@testable import JotterCLI
import JotterCLICore
import JotterTestSupport

/// `jotter completion bash|zsh|fish` and `jotter help --man`, made from the commands' own
/// declarations, run in the real shells (zsh and fish: scripts/install-deps --test installs them).
@Suite("Shell completions and the manual page")
struct CompletionTests {
    /// Runs `program arguments`; its exit status, standard output and error.
    static func run(_ program: String, _ arguments: [String], input: String? = nil) throws -> (status: Int32, out: String, err: String) {
        let run = try runProgram([program] + arguments, input: Array((input ?? "").utf8), separateErrors: true)
        return (run.status, run.output, run.errors)
    }

    /// The script `jotter completion SHELL` prints, in a file.
    static func script(_ shell: String) throws -> URL {
        let printed = try BinaryTests.jotter(["completion", shell], environment: [:])
        try #require(printed.status == 0, "\(printed.err)")
        let file = try scratchFolder().appendingPathComponent("jotter.\(shell)")
        try Data(printed.out.utf8).write(to: file)
        return file
    }

    @Test("bash: commands, subcommands after client options, each command's own options, paths for file options; every command of the table")
    func bash() throws {
        let script = try Self.script("bash")
        #expect(try Self.run("/bin/bash", ["-n", script.path]).status == 0)
        // Each case: the words, then what is offered for the last one.
        let cases: [([String], String)] = [
            (["jotter", "no"], "notes"),
            (["jotter", "notes", ""], "list show add edit rm watch history restore trash changes"),
            (["jotter", "--server", "h:1", "notes", "l"], "list"),
            (["jotter", "download", "abc", "--ou"], "--output"),
            (["jotter", "uploads", "list", "--after", "x", "--j"], "--json"),
            (["jotter", "help", "--m"], "--man"),
            (["jotter", "completion", "--h"], "--help"),
        ]
        var program = "source \(script.path)\nt() { COMP_WORDS=(\"$@\"); COMP_CWORD=$(($# - 1)); _jotter; echo \"${COMPREPLY[*]}\"; }\n"
        for (words, _) in cases { program += "t " + words.map { "'\($0)'" }.joined(separator: " ") + "\n" }
        // Every path's subcommands, as the command table declares them.
        let tree = JotterCommandLine.tree
        for node in tree.nodes { program += "printf '%s\\n' \"$(_jotter_subcommands '\(node.path)')\"\n" }
        let result = try Self.run("/bin/bash", ["-c", program])
        #expect(result.status == 0, "\(result.err)")
        let lines = result.out.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        for (index, (words, expected)) in cases.enumerated() {
            #expect(lines[index] == expected, "\(words)")
        }
        for (index, node) in tree.nodes.enumerated() {
            #expect(lines[cases.count + index] == node.subcommands.joined(separator: " "), "'\(node.path)'")
        }
        #expect(tree.nodes.map(\.path).contains("notes add"))
        #expect(tree.nodes.map(\.path).contains("tokens revoke"))
    }

    @Test("zsh: the script parses and lists subcommands and options with their descriptions")
    func zsh() throws {
        let script = try Self.script("zsh")
        #expect(try Self.run("/usr/bin/zsh", ["-n", script.path]).status == 0)
        let result = try Self.run(
            "/usr/bin/zsh",
            [
                "-fc",
                """
                autoload -U compinit && compinit -u -D
                source \(script.path)
                _jotter_subcommands notes; print -rl -- $reply
                _jotter_options 'notes list'; print -rl -- $reply
                _jotter_valued 'notes list' --limit && print valued
                _jotter_path_valued 'download' --output && print path
                """,
            ])
        #expect(result.status == 0, "\(result.err)")
        #expect(result.out.contains("add:Add a note.\n"))
        #expect(result.out.contains("--limit:At most N notes.\n"))
        #expect(result.out.contains("--server:The Jotter server; host\\:port alone"))
        #expect(result.out.contains("valued\npath\n"))
    }

    @Test("fish: complete -C offers subcommands with their summaries and the options of the command being typed")
    func fish() throws {
        let script = try Self.script("fish")
        #expect(try Self.run("/usr/bin/fish", ["--no-execute", script.path]).status == 0)
        let result = try Self.run(
            "/usr/bin/fish",
            [
                "-c",
                """
                source \(script.path)
                complete -C 'jotter notes '
                echo ---
                complete -C 'jotter --server h:1 notes list --l'
                echo ---
                complete -C 'jotter up'
                """,
            ])
        #expect(result.status == 0, "\(result.err)")
        let parts = result.out.components(separatedBy: "---\n")
        try #require(parts.count == 3, "\(result.out)")
        #expect(parts[0].contains("add\tAdd a note.\n"))
        #expect(parts[0].contains("watch\t"))
        #expect(parts[1] == "--limit\tAt most N notes.\n")
        #expect(parts[2].hasPrefix("upload\t") && parts[2].contains("uploads\t"))
    }

    /// A folder holding one file, `notes.tar`, to complete in: a file is offered only where a file goes.
    static func folderWithAFile() throws -> URL {
        let folder = try scratchFolder()
        try Data("x".utf8).write(to: folder.appendingPathComponent("notes.tar"))
        return folder
    }

    @Test("bash: the values an option lists, a command's listed arguments, files only where a file goes")
    func bashValues() throws {
        let script = try Self.script("bash")
        let folder = try Self.folderWithAFile()
        defer { try? FileManager.default.removeItem(at: folder) }
        let cases: [([String], String)] = [
            (["jotter", "serve", "--auth", ""], "required off"),
            (["jotter", "serve", "--synchronous", "n"], "normal"),
            (["jotter", "--server", "h:1", "notes", "list", "--order", ""], "newest oldest updated"),
            (["jotter", "completion", ""], "bash zsh fish"),
            (["jotter", "completion", "f"], "fish"),
            (["jotter", "notes", "show", ""], ""),
            (["jotter", "hello", ""], ""),
            (["jotter", "serve", "--port", ""], ""),
            (["jotter", "export", "no"], "notes.tar"),
            (["jotter", "upload", ""], "notes.tar"),
            (["jotter", "serve", "--data", "no"], "notes.tar"),
        ]
        var program =
            "cd \(folder.path)\nsource \(script.path)\nt() { COMP_WORDS=(\"$@\"); COMP_CWORD=$(($# - 1)); _jotter; echo \"${COMPREPLY[*]}\"; }\n"
        for (words, _) in cases { program += "t " + words.map { "'\($0)'" }.joined(separator: " ") + "\n" }
        let result = try Self.run("/bin/bash", ["-c", program])
        #expect(result.status == 0, "\(result.err)")
        let lines = result.out.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        for (index, (words, expected)) in cases.enumerated() {
            #expect(lines[index] == expected, "\(words)")
        }
    }

    @Test("zsh: the values an option lists and a command's arguments, from the same functions")
    func zshValues() throws {
        let script = try Self.script("zsh")
        let result = try Self.run(
            "/usr/bin/zsh",
            [
                "-fc",
                """
                autoload -U compinit && compinit -u -D
                source \(script.path)
                print -r -- "[$(_jotter_choices serve --auth)]"
                print -r -- "[$(_jotter_choices 'notes list' --order)]"
                print -r -- "[$(_jotter_operands completion)]"
                print -r -- "[$(_jotter_operands export)]"
                print -r -- "[$(_jotter_operands 'notes show')]"
                """,
            ])
        #expect(result.status == 0, "\(result.err)")
        #expect(result.out == "[required off]\n[newest oldest updated]\n[bash zsh fish]\n[@files]\n[]\n", "\(result.out)")
    }

    @Test("fish: option values and listed arguments are offered; files only where a file goes")
    func fishValues() throws {
        let script = try Self.script("fish")
        let folder = try Self.folderWithAFile()
        defer { try? FileManager.default.removeItem(at: folder) }
        let result = try Self.run(
            "/usr/bin/fish",
            [
                "-c",
                """
                cd \(folder.path)
                source \(script.path)
                complete -C 'jotter serve --auth '
                echo ---
                complete -C 'jotter completion '
                echo ---
                complete -C 'jotter notes show '
                echo ---
                complete -C 'jotter serve --port '
                echo ---
                complete -C 'jotter export '
                echo ---
                complete -C 'jotter notes list --order '
                """,
            ])
        #expect(result.status == 0, "\(result.err)")
        let parts = result.out.components(separatedBy: "---\n").map {
            $0.split(separator: "\n").map { String($0.split(separator: "\t").first ?? "") }
        }
        try #require(parts.count == 6, "\(result.out)")
        #expect(parts[0] == ["off", "required"] || parts[0] == ["required", "off"], "\(parts[0])")
        #expect(Set(parts[1]) == ["bash", "zsh", "fish"], "\(parts[1])")
        #expect(parts[2].isEmpty, "an id is not a file: \(parts[2])")
        #expect(parts[3].isEmpty, "a port is not a file: \(parts[3])")
        #expect(parts[4] == ["notes.tar"], "\(parts[4])")
        #expect(Set(parts[5]) == ["newest", "oldest", "updated"], "\(parts[5])")
    }

    @Test("jotter help --man: a manual page that groff reads without a warning, with every command, option variable and exit code")
    func manualPage() throws {
        let printed = try BinaryTests.jotter(["help", "--man"], environment: [:])
        #expect(printed.status == 0)
        #expect(printed.out.hasPrefix(".TH JOTTER 1 "))
        for node in JotterCommandLine.tree.nodes.dropFirst() where node.path != "help" {
            #expect(printed.out.contains(".SS jotter \(node.path.replacing("-", with: "\\-"))\n"), "\(node.path)")
        }
        for variable in ["JOTTER_SERVER", "JOTTER_TOKEN", "JOTTER_CACERT", "JOTTER_PORT", "JOTTER_MAX_TOKENS_PER_USER"] {
            #expect(printed.out.contains(".B \(variable.replacing("-", with: "\\-"))\n"), "\(variable)")
        }
        #expect(printed.out.contains(".SH EXIT STATUS"))
        let groff = try Self.run("/usr/bin/groff", ["-man", "-z", "-ww"], input: printed.out)
        #expect(groff.status == 0)
        #expect(groff.err.isEmpty, "\(groff.err)")
        #expect(try BinaryTests.jotter(["help", "notes", "--man"], environment: [:]).status == ExitCode.usage)
        #expect(try BinaryTests.jotter(["completion", "tcsh"], environment: [:]).status == ExitCode.usage)
        #expect(try BinaryTests.jotter(["completion"], environment: [:]).status == ExitCode.usage)
    }
}

import JotterCLICore

/// The command tree as the completions and the man page see it: every command's path, its
/// subcommands and its options, read from the one declaration each command has (`name`,
/// `summary`, `about`, `operands`, `options`, `subcommands`) — nothing is listed twice.
struct CommandTree {
    struct Node {
        /// `""` for `jotter` itself, else `notes add`.
        var path: String
        var summary: String
        var usage: String
        var about: String
        var options: [Option]
        var subcommands: [String]
        /// The name its declaration gives its first operand (`ID`, `FILE`, `bash|zsh|fish`).
        var firstOperand: String? = nil
        /// What its arguments are, from that name.
        var operands: Operands { CommandTree.operands(firstOperand) }
    }

    /// What a command's positional arguments are, from the name of the first: a list of words
    /// (`bash|zsh|fish`), paths (`FILE`, `PATH`, `DIR`, `DEST`, `SRC`), or anything else — an id, a name, text — which nothing can complete (not files).
    enum Operands: Equatable {
        case none
        case files
        case words([String])
    }

    static func operands(_ first: String?) -> Operands {
        guard let word = first else { return .none }
        let choices = Option.choices(word)
        if !choices.isEmpty { return .words(choices) }
        return ["FILE", "PATH", "DIR", "DEST", "SRC"].contains(word) ? .files : .none
    }

    let nodes: [Node]

    init(_ commands: [any Command.Type], rootOptions: [Option]) {
        var nodes = [
            Node(
                path: "", summary: "notes, uploads and hello, served over HTTP", usage: "jotter [options] <command> [options]",
                about: "", options: rootOptions + [.help, Option(["--version"], help: "Show the version.")],
                subcommands: commands.map { $0.name } + ["help"])
        ]
        func walk(_ type: any Command.Type, path: String) {
            nodes.append(
                Node(
                    path: path, summary: type.summary, usage: type.usage("jotter " + path), about: type.about,
                    options: type.options + [.help], subcommands: type.subcommands.map { $0.name }, firstOperand: type.firstOperand))
            for sub in type.subcommands { walk(sub, path: path + " " + sub.name) }
        }
        for type in commands { walk(type, path: type.name) }
        nodes.append(
            Node(
                path: "help", summary: "Show the help of a command (--man: the manual page)", usage: "jotter help [COMMAND…] [--man]",
                about: "", options: [Option(["--man"], help: "Print the manual page (roff).")], subcommands: commands.map { $0.name }))
        self.nodes = nodes
    }

    /// Whether an option's value names a file or folder (completed as paths).
    static func takesPath(_ option: Option) -> Bool {
        ["FILE", "PATH", "DIR", "FOLDER", "PATH|-"].contains(option.value ?? "")
    }

    // MARK: - bash

    /// `_jotter_valued PATH OPTION` (the option takes a value there), `_jotter_path_valued`
    /// (a file or folder), `_jotter_choices PATH OPTION` (the values it lists) and
    /// `_jotter_operands PATH` (a command's arguments: words, `@files`, or nothing): the same
    /// in bash and zsh.
    var valueFunctions: String {
        func patterns(_ include: (Option) -> Bool) -> String {
            let all = nodes.flatMap { node in node.options.filter(include).flatMap { $0.names.map { Self.quoted(node.path + ":" + $0) } } }
            return all.isEmpty ? "''" : all.joined(separator: "|")
        }
        let choices = nodes.flatMap { node in
            node.options.filter { !$0.choices.isEmpty }.map { option in
                "    \(option.names.map { Self.quoted(node.path + ":" + $0) }.joined(separator: "|"))) echo \(Self.quoted(option.choices.joined(separator: " "))) ;;"
            }
        }.joined(separator: "\n")
        let operands = nodes.filter { $0.subcommands.isEmpty }.compactMap { node -> String? in
            switch node.operands {
            case .none: nil
            case .files: "    \(Self.quoted(node.path))) echo @files ;;"
            case .words(let words): "    \(Self.quoted(node.path))) echo \(Self.quoted(words.joined(separator: " "))) ;;"
            }
        }.joined(separator: "\n")
        return """
            # Options that take a value, as "path:option".
            _jotter_valued() {
              case "$1:$2" in
                \(patterns { $0.value != nil })) return 0 ;;
              esac
              return 1
            }

            # Options whose value is a file or folder.
            _jotter_path_valued() {
              case "$1:$2" in
                \(patterns(Self.takesPath))) return 0 ;;
              esac
              return 1
            }

            # The values an option lists (--auth required|off).
            _jotter_choices() {
              case "$1:$2" in
            \(choices)
              esac
            }

            # A command's arguments: its words, @files for paths, nothing for an id, name or text.
            _jotter_operands() {
              case "$1" in
            \(operands)
              esac
            }
            """
    }

    var bash: String {
        func cases(_ body: (Node) -> String?) -> String {
            nodes.compactMap { node in body(node).map { "    \(Self.quoted(node.path))) echo \(Self.quoted($0)) ;;" } }.joined(separator: "\n")
        }
        return """
            # bash completion for jotter, made by `jotter completion bash` from the commands' own declarations.
            # Load it with: source <(jotter completion bash)   (or save it in /etc/bash_completion.d/jotter)

            _jotter_subcommands() {
              case "$1" in
            \(cases { $0.subcommands.isEmpty ? nil : $0.subcommands.joined(separator: " ") })
              esac
            }

            _jotter_options() {
              case "$1" in
            \(cases { $0.options.isEmpty ? nil : $0.options.flatMap(\.names).joined(separator: " ") })
              esac
            }

            \(valueFunctions)

            _jotter() {
              local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]} words_path= i w
              for ((i = 1; i < COMP_CWORD; i++)); do
                w=${COMP_WORDS[i]}
                if [[ $w == -* ]]; then
                  if [[ $w != *=* ]] && _jotter_valued "$words_path" "$w"; then ((i++)); fi
                  continue
                fi
                case " $(_jotter_subcommands "$words_path") " in
                  *" $w "*) words_path=${words_path:+$words_path }$w ;;
                esac
              done
              COMPREPLY=()
              if [[ $prev == -* ]] && _jotter_valued "$words_path" "$prev"; then
                if _jotter_path_valued "$words_path" "$prev"; then
                  COMPREPLY=($(compgen -f -- "$cur"))
                else
                  COMPREPLY=($(compgen -W "$(_jotter_choices "$words_path" "$prev")" -- "$cur"))
                fi
                return 0
              fi
              if [[ $cur == -* ]]; then
                COMPREPLY=($(compgen -W "$(_jotter_options "$words_path")" -- "$cur"))
                return 0
              fi
              local subcommands=$(_jotter_subcommands "$words_path")
              if [[ -n $subcommands ]]; then
                COMPREPLY=($(compgen -W "$subcommands" -- "$cur"))
                return 0
              fi
              local operands=$(_jotter_operands "$words_path")
              if [[ $operands == @files ]]; then
                COMPREPLY=($(compgen -f -- "$cur"))
              elif [[ -n $operands ]]; then
                COMPREPLY=($(compgen -W "$operands" -- "$cur"))
              fi
              return 0
            }

            complete -o filenames -F _jotter jotter

            """
    }

    // MARK: - zsh

    var zsh: String {
        func entries(_ node: Node) -> [String] {
            node.subcommands.map { name in
                let summary = nodes.first { $0.path == (node.path.isEmpty ? name : node.path + " " + name) }?.summary ?? ""
                return Self.quoted(name + ":" + summary.replacingColons)
            }
        }
        func optionEntries(_ node: Node) -> [String] {
            node.options.flatMap { option in option.names.map { Self.quoted($0 + ":" + option.help.replacingColons) } }
        }
        let subcommandCases = nodes.filter { !$0.subcommands.isEmpty }
            .map { "    \(Self.quoted($0.path))) reply=(\(entries($0).joined(separator: " "))) ;;" }.joined(separator: "\n")
        let optionCases = nodes.map { "    \(Self.quoted($0.path))) reply=(\(optionEntries($0).joined(separator: " "))) ;;" }.joined(separator: "\n")
        return """
            #compdef jotter
            # zsh completion for jotter, made by `jotter completion zsh` from the commands' own declarations.
            # Save it as _jotter in a folder of $fpath (or: source <(jotter completion zsh) after compinit).

            _jotter_subcommands() {
              case "$1" in
            \(subcommandCases)
                *) reply=() ;;
              esac
            }

            _jotter_options() {
              case "$1" in
            \(optionCases)
                *) reply=() ;;
              esac
            }

            \(valueFunctions)

            _jotter() {
              local words_path= i w
              local -a reply names
              for ((i = 2; i < CURRENT; i++)); do
                w=${words[i]}
                if [[ $w == -* ]]; then
                  if [[ $w != *=* ]] && _jotter_valued "$words_path" "$w"; then ((i++)); fi
                  continue
                fi
                _jotter_subcommands "$words_path"
                names=(${reply%%:*})
                if (( ${names[(Ie)$w]} )); then words_path=${words_path:+$words_path }$w; fi
              done
              local prev=${words[CURRENT-1]}
              local -a choices
              if [[ $prev == -* ]] && _jotter_valued "$words_path" "$prev"; then
                if _jotter_path_valued "$words_path" "$prev"; then
                  _files
                else
                  choices=(${=$(_jotter_choices "$words_path" "$prev")})
                  (( ${#choices} )) && compadd -a choices
                fi
                return
              fi
              if [[ ${words[CURRENT]} == -* ]]; then
                _jotter_options "$words_path"
                _describe -t options 'option' reply
                return
              fi
              _jotter_subcommands "$words_path"
              if (( ${#reply} )); then
                _describe -t commands 'command' reply
                return
              fi
              local operands=$(_jotter_operands "$words_path")
              if [[ $operands == @files ]]; then
                _files
              elif [[ -n $operands ]]; then
                choices=(${=operands})
                compadd -a choices
              fi
            }

            if [[ $zsh_eval_context[-1] == loadautofunc ]]; then
              _jotter "$@"
            else
              compdef _jotter jotter
            fi

            """
    }

    // MARK: - fish

    var fish: String {
        var lines = [
            "# fish completion for jotter, made by `jotter completion fish` from the commands' own declarations.",
            "# Save it as ~/.config/fish/completions/jotter.fish (or: jotter completion fish | source).",
            "",
            "# The command path of the line being completed: its words that name commands.",
            "function __jotter_path",
            "    set -l tokens (commandline -opc)",
            "    set -l path ''",
            "    set -l skip 0",
            "    for token in $tokens[2..-1]",
            "        if test $skip -eq 1",
            "            set skip 0",
            "            continue",
            "        end",
            "        if string match -q -- '-*' $token",
            "            if not string match -q -- '*=*' $token; and __jotter_valued \"$path\" $token",
            "                set skip 1",
            "            end",
            "            continue",
            "        end",
            "        if contains -- $token (__jotter_subcommands \"$path\")",
            "            set path (string trim -- \"$path $token\")",
            "        end",
            "    end",
            "    echo $path",
            "end",
            "",
            "function __jotter_subcommands",
            "    switch $argv[1]",
        ]
        for node in nodes where !node.subcommands.isEmpty {
            lines.append("        case \(Self.fishQuoted(node.path))")
            lines.append("            printf '%s\\n' \(node.subcommands.map(Self.fishQuoted).joined(separator: " "))")
        }
        lines += ["    end", "end", "", "function __jotter_valued", "    switch \"$argv[1]:$argv[2]\""]
        let valued = nodes.flatMap { node in
            node.options.filter { $0.value != nil }.flatMap { $0.names.map { Self.fishQuoted(node.path + ":" + $0) } }
        }
        if !valued.isEmpty { lines += ["        case \(valued.joined(separator: " "))", "            return 0"] }
        lines += [
            "    end", "    return 1", "end", "", "function __jotter_at", "    test (__jotter_path) = $argv[1]", "end", "",
            "complete -c jotter -f",
        ]
        for node in nodes {
            let condition = "-n " + Self.fishQuoted("__jotter_at " + Self.fishQuoted(node.path))
            for sub in node.subcommands {
                let summary = nodes.first { $0.path == (node.path.isEmpty ? sub : node.path + " " + sub) }?.summary ?? ""
                lines.append("complete -c jotter \(condition) -a \(Self.fishQuoted(sub)) -d \(Self.fishQuoted(summary))")
            }
            for option in node.options {
                var spec = option.names.map { $0.hasPrefix("--") ? "-l " + String($0.dropFirst(2)) : "-s " + String($0.dropFirst()) }
                // A path: files; listed values: those alone; any other value: nothing offered.
                if option.value != nil {
                    spec.append(
                        Self.takesPath(option)
                            ? "-r -F"
                            : option.choices.isEmpty ? "-x" : "-x -a " + Self.fishQuoted(option.choices.joined(separator: " ")))
                }
                lines.append("complete -c jotter \(condition) \(spec.joined(separator: " ")) -d \(Self.fishQuoted(option.help))")
            }
            if node.subcommands.isEmpty, !node.path.isEmpty {
                switch node.operands {
                case .files: lines.append("complete -c jotter \(condition) -F")
                case .words(let words): lines.append("complete -c jotter \(condition) -a \(Self.fishQuoted(words.joined(separator: " ")))")
                case .none: break  // an id, a name, text: nothing to offer, no files
                }
            }
        }
        return lines.joined(separator: "\n") + "\n"
    }

    // MARK: - The manual page

    var man: String {
        func roff(_ text: String) -> String {
            text.split(separator: "\n", omittingEmptySubsequences: false).map { line -> String in
                var line = String(line).replacing("\\", with: "\\e")
                if line.hasPrefix(".") || line.hasPrefix("'") { line = "\\&" + line }
                line = line.replacing("-", with: "\\-")
                // Beyond ASCII as groff's named Unicode characters (\[u2026] for …).
                return line.unicodeScalars.map { $0.isASCII ? String($0) : "\\[u" + Self.hex($0.value) + "]" }.joined()
            }.joined(separator: "\n")
        }
        func options(_ list: [Option]) -> String {
            list.map { option in
                let names = option.names.map { "\\fB\(roff($0))\\fR" }.joined(separator: ", ") + (option.value.map { " \\fI\(roff($0))\\fR" } ?? "")
                var text = option.help
                if let variable = option.environment { text += " (\(variable))" }
                if let value = option.defaultValue { text += " Default: \(value)." }
                return ".TP\n\(names)\n\(roff(text))"
            }.joined(separator: "\n")
        }
        let root = nodes[0]
        var page = """
            .TH JOTTER 1 "" "jotter \(JotterCommandLine.version)" "User Commands"
            .SH NAME
            jotter \\- \(roff(root.summary))
            .SH SYNOPSIS
            .B jotter
            [\\fIoptions\\fR] \\fIcommand\\fR [\\fIoptions\\fR]
            .SH DESCRIPTION
            \(roff("jotter serves notes and uploads over HTTP (jotter serve) and is a client of a running server. Client commands talk to --server URL (JOTTER_SERVER, default \(ClientOptions.defaultServer)); --server, --token and --json may come before the command or after it."))
            .SH OPTIONS
            \(options(root.options))
            .SH COMMANDS

            """
        for node in nodes.dropFirst() where node.path != "help" {
            page += ".SS \(roff("jotter " + node.path))\n\(roff(node.summary))\n.PP\n.nf\n\(roff(node.usage))\n.fi\n"
            if !node.about.isEmpty, node.about != node.summary { page += ".PP\n\(roff(node.about))\n" }
            if !node.subcommands.isEmpty { page += ".PP\nSubcommands: \(roff(node.subcommands.joined(separator: ", "))).\n" }
            let own = node.options.filter { $0.key != Option.help.key }
            if !own.isEmpty { page += ".PP\n.RS\n\(options(own))\n.RE\n" }
        }
        let variables = nodes.flatMap { $0.options.compactMap { option in option.environment.map { ($0, option) } } }
        var seen = Set<String>()
        page += ".SH ENVIRONMENT\n"
        for (variable, option) in variables where seen.insert(variable).inserted {
            page += ".TP\n.B \(roff(variable))\n\(roff("As \(option.key): \(option.help)"))\n"
        }
        page += ".SH EXIT STATUS\n.nf\n\(roff(ExitCode.help.split(separator: "\n").dropFirst().joined(separator: "\n")))\n.fi\n"
        page += ".SH SEE ALSO\n\(roff("jotter help COMMAND, jotter COMMAND --help; jotter completion bash|zsh|fish."))\n"
        return page
    }

    /// Four or more upper-case hex digits, as groff names a character.
    static func hex(_ value: UInt32) -> String {
        let digits = String(value, radix: 16, uppercase: true)
        return String(repeating: "0", count: max(0, 4 - digits.count)) + digits
    }

    /// `text` in single quotes for bash and zsh (where nothing inside is special but `'`).
    static func quoted(_ text: String) -> String {
        "'" + text.replacing("'", with: "'\\''") + "'"
    }

    /// `text` in single quotes for fish (where `\\` and `\'` are escapes inside them).
    static func fishQuoted(_ text: String) -> String {
        "'" + text.replacing("\\", with: "\\\\").replacing("'", with: "\\'") + "'"
    }
}

extension String {
    /// zsh's `_describe` splits "name:description" at the first unescaped colon.
    fileprivate var replacingColons: String { replacing(":", with: "\\:") }
}

/// `jotter completion bash|zsh|fish`: the shell completion script, from the commands' own
/// declarations.
struct CompletionCommand: BlockingCommand, ParsableArguments {
    static let name = "completion"
    static let summary = "Print the shell completion script for bash, zsh or fish."
    static let about = """
        Prints a completion script for the shell: commands, subcommands and each command's options,
        from the same declarations as --help. bash: source <(jotter completion bash), or save it in
        /etc/bash_completion.d/jotter. zsh: save it as _jotter in a folder of $fpath. fish: save it as
        ~/.config/fish/completions/jotter.fish. The manual page: jotter help --man.
        """

    @Operand(.single("bash|zsh|fish", missing: "missing the shell: jotter completion bash, zsh or fish")) var shell: String

    func validate(_ arguments: Arguments) throws {
        guard ["bash", "zsh", "fish"].contains(shell) else { throw UsageError("no completion for '\(shell)': bash, zsh or fish") }
    }

    func run(console: Console) throws -> Int32 {
        let tree = JotterCommandLine.tree
        console.out(shell == "bash" ? tree.bash : shell == "zsh" ? tree.zsh : tree.fish)
        return ExitCode.success
    }
}

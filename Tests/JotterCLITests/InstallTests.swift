import Foundation
import Testing
import JotterTestSupport

/// `make install` and the systemd unit it installs (contrib/jotter.service).
@Suite("make install and the systemd unit")
struct InstallTests {
    /// The package's root folder.
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    /// `debug` or `release`: the build the tests run from.
    static let configuration = ServerProcess.binary.deletingLastPathComponent().lastPathComponent

    static let hasAnalyze = FileManager.default.isExecutableFile(atPath: "/usr/bin/systemd-analyze")

    /// Runs a program in the package root: its exit status and what it printed on each stream.
    static func run(_ arguments: [String]) throws -> (status: Int32, out: String, err: String) {
        let run = try runProgram(arguments, directory: root, separateErrors: true)
        return (run.status, run.output, run.errors)
    }

    /// `make install-files` (what `make install` does after building) with these variables.
    static func install(_ variables: [String]) throws {
        let result = try run(["make", "--no-print-directory", "install-files", "CONFIGURATION=\(configuration)"] + variables)
        try #require(result.status == 0, "\(result.err)")
    }

    static func files(under folder: URL) -> [String] {
        let enumerator = FileManager.default.enumerator(atPath: folder.path)
        var files: [String] = []
        while let path = enumerator?.nextObject() as? String {
            var isFolder: ObjCBool = false
            if FileManager.default.fileExists(atPath: folder.appendingPathComponent(path).path, isDirectory: &isFolder), !isFolder.boolValue {
                files.append(path)
            }
        }
        return files.sorted()
    }

    /// The overall exposure `systemd-analyze security` gives, 0 (best) to 10.
    static func exposure(_ report: String) -> Double? {
        guard let match = report.firstMatch(of: /Overall exposure level for jotter.service: ([0-9.]+)/) else { return nil }
        return Double(String(match.1))
    }

    @Test(
        "PREFIX and DESTDIR: jotter, jotter-server, the unit, the manual page and the completions, nothing else; ExecStart names the installed server"
    )
    func staged() throws {
        let stage = try scratchFolder()
        defer { try? FileManager.default.removeItem(at: stage) }
        try Self.install(["DESTDIR=\(stage.path)", "PREFIX=/usr"])
        #expect(
            Self.files(under: stage) == [
                "usr/bin/jotter", "usr/bin/jotter-server", "usr/lib/systemd/system/jotter.service",
                "usr/share/bash-completion/completions/jotter", "usr/share/fish/vendor_completions.d/jotter.fish",
                "usr/share/man/man1/jotter.1", "usr/share/zsh/site-functions/_jotter",
            ])
        // Printed by the installed jotter from its own declarations: what --help says, as it says it.
        let jotter = stage.path + "/usr/bin/jotter"
        #expect(
            try String(contentsOfFile: stage.path + "/usr/share/man/man1/jotter.1", encoding: .utf8) == (try Self.run([jotter, "help", "--man"])).out)
        for (shell, path) in [
            ("bash", "bash-completion/completions/jotter"), ("zsh", "zsh/site-functions/_jotter"), ("fish", "fish/vendor_completions.d/jotter.fish"),
        ] {
            let installed = try String(contentsOfFile: stage.path + "/usr/share/" + path, encoding: .utf8)
            #expect(installed == (try Self.run([jotter, "completion", shell])).out, "\(shell)")
        }
        for program in ["jotter", "jotter-server"] {
            #expect(FileManager.default.isExecutableFile(atPath: stage.path + "/usr/bin/" + program))
        }
        let version = try Self.run([stage.path + "/usr/bin/jotter", "--version"])
        #expect(version.out == "jotter 0.1.0\n")
        let unit = try String(contentsOfFile: stage.path + "/usr/lib/systemd/system/jotter.service", encoding: .utf8)
        #expect(unit.contains("\nExecStart=/usr/bin/jotter-server --data ${STATE_DIRECTORY}\n"))
        #expect(try Self.run(["make", "--no-print-directory", "uninstall", "DESTDIR=\(stage.path)", "PREFIX=/usr"]).status == 0)
        #expect(Self.files(under: stage).isEmpty, "uninstall leaves \(Self.files(under: stage))")
    }

    @Test(
        "the unit passes systemd-analyze verify without a warning, sandboxed (exposure under 2 of 10)",
        .enabled(if: hasAnalyze, "systemd-analyze is missing: make test installs it (Debian package systemd)"))
    func verified() throws {
        let prefix = try scratchFolder()
        defer { try? FileManager.default.removeItem(at: prefix) }
        try Self.install(["PREFIX=\(prefix.path)"])
        let unit = prefix.path + "/lib/systemd/system/jotter.service"
        let verify = try Self.run(["systemd-analyze", "verify", unit])
        #expect(verify.status == 0)
        #expect(verify.out + verify.err == "", "systemd-analyze verify complained")
        let text = try String(contentsOfFile: unit, encoding: .utf8)
        for option in [
            "DynamicUser=yes", "StateDirectory=jotter", "ProtectSystem=strict", "NoNewPrivileges=yes", "ProtectHome=yes",
            "PrivateTmp=yes", "CapabilityBoundingSet=\n", "SystemCallFilter=@system-service",
        ] {
            #expect(text.contains("\n" + option), "\(option)")
        }
        let security = try Self.run(["systemd-analyze", "security", "--offline=true", "--no-pager", unit])
        let exposure = Self.exposure(security.out)
        #expect((exposure ?? 10) < 2, "exposure \(exposure.map { String($0) } ?? "unknown"): \(security.err)")

        // A broken option is caught: verify warns, which the check above would see.
        let broken = prefix.appendingPathComponent("broken.service")
        try Data(text.replacing("ProtectSystem=strict", with: "ProtectSystem=stric").utf8).write(to: broken)
        let complaint = try Self.run(["systemd-analyze", "verify", broken.path])
        #expect(complaint.err.contains("Failed to parse protect system value"))
    }
}

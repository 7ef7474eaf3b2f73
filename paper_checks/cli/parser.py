"""The argument parser shared by the command-line front ends of :mod:`paper_checks.cli`."""

import argparse


class Parser(argparse.ArgumentParser):
    """argparse with a one-line usage error (``connwalk: error: argument --seed: ...``), exit 2."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")

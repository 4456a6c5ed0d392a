"""redjury inside other tools' runs (inspect_ai); each module needs its tool's extra."""

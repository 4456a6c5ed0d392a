"""Root of the test folders: its presence puts tests/ on sys.path, so one test module can
import another's fixtures (`from test_pipeline import redaction_inputs`). The helpers live in
tests/support/redjury_testing.py; real third-party data comes only through
$REDJURY_TEST_DATA (see `redjury_testing.real_data`)."""

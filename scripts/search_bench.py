#!/usr/bin/env python3
"""Cost of conversation search on SQLite (BENCHMARKS.md): the CPU an insert of one message pays
for the trigram index (the migration's triggers), and the time of the search statement of
src/store/conversations/search.rs with and without the index, on the migrations' own schema in
an in-memory database (Python's sqlite3; the binary bundles a newer SQLite).
Usage: python3 scripts/search_bench.py [conversations]   (25 messages of ~630 characters each)"""
import pathlib, random, sqlite3, statistics, string, sys, time

ROOT = pathlib.Path(__file__).resolve().parent.parent / 'migrations' / 'sqlite'
SCHEMA = (ROOT / '20240601000000_initial.sql').read_text().split('CREATE TABLE runs')[0]
SEARCH = (ROOT / '20261204170000_message_search.sql').read_text()
random.seed(1)
WORDS = [''.join(random.choices(string.ascii_lowercase, k=random.randint(3, 9))) for _ in range(20000)]


def fill(db, conversations):
    """Inserts the messages one statement each; returns the CPU microseconds per message."""
    start = time.process_time()
    for c in range(conversations):
        cid = f'c{c:05d}'
        db.execute("INSERT INTO conversations (id, owner, title, created_at, updated_at) "
                   "VALUES (?, 'o', ?, ?, ?)", (cid, ' '.join(random.choices(WORDS, k=5)), c, c))
        for m in range(25):
            db.execute("INSERT INTO messages (id, conversation_id, role, kind, content, created_at) "
                       "VALUES (?, ?, 'user', 'query', ?, 0)", (f'{cid}-{m}', cid, ' '.join(random.choices(WORDS, k=90))))
    return (time.process_time() - start) / (conversations * 25) * 1e6


def median_ms(db, sql, args):
    times = []
    for _ in range(7):
        start = time.perf_counter()
        db.execute(sql, args).fetchall()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def main():
    conversations = int(sys.argv[1]) if len(sys.argv) > 1 else 800
    dbs = {}
    for indexed in (False, True):
        db = sqlite3.connect(':memory:')
        db.executescript(SCHEMA + (SEARCH if indexed else ''))
        cpu = fill(db, conversations)
        db.execute("INSERT INTO messages (id, conversation_id, role, kind, content, created_at) "
                   "VALUES ('x', 'c00007', 'assistant', 'answer', 'the word zyxwvuts once', 0)")
        print(f"insert, {'with' if indexed else 'without'} the index: {cpu:.0f} µs CPU per message")
        dbs[indexed] = db
    head = ("SELECT c.id FROM conversations c WHERE c.owner = $1 AND (c.title LIKE $2 ESCAPE '\\' "
            "OR c.id IN (")
    tail = ")) ORDER BY c.updated_at DESC, c.id DESC LIMIT 51"
    fts = head + ("SELECT m.conversation_id FROM messages_fts JOIN messages m ON m.pos = "
                  "messages_fts.rowid WHERE messages_fts MATCH $3") + tail
    scan = head + "SELECT m.conversation_id FROM messages m WHERE m.content LIKE $2 ESCAPE '\\'" + tail
    rare = {'1': 'o', '2': '%zyxwvuts%', '3': '"zyxwvuts"'}
    print(f'search, {conversations * 25} messages, a rare word: '
          f'{median_ms(dbs[True], fts, rare):.1f} ms with the index, '
          f'{median_ms(dbs[False], scan, {"1": "o", "2": rare["2"]}):.1f} ms by a scan (median of 7)')


main()

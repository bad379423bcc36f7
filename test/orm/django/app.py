"""test/t/070_orm_django.pl: Django's makemigrations and migrate make the
tables of the app "shop", then the application inserts through Django's ORM
and prints what the test checks (see test/t/FlakeOrm.pm); then the rest of
a developer's loop: makemigrations --check (no drift), inspectdb (nothing
of flake's), dumpdata (a fixture), and Django's test runner, whose test
database test_app loads the fixture and makes ids (shop/tests.py).

DEFAULT_AUTO_FIELD is BigAutoField, as Django's project template sets it
since 3.2: the models' keys are 64-bit (AutoField's are 32-bit, which
flake.serial_default leaves to their sequences)."""
import io
import json
import os
import sys
import time

import django
import psycopg2
from django.conf import settings

from connection import DATABASES

settings.configure(
    INSTALLED_APPS=["shop"],
    DATABASES=DATABASES,
    DEFAULT_AUTO_FIELD="django.db.models.BigAutoField",
    USE_TZ=True,
)
django.setup()

from django.core.management import call_command  # noqa: E402
from django.db import IntegrityError, transaction  # noqa: E402

call_command("makemigrations", "shop", verbosity=0)
call_command("migrate", verbosity=0)

from shop.models import Author, Book  # noqa: E402

started = int(time.time() * 1000)
with transaction.atomic():
    authors = [Author.objects.create(name=n) for n in ("Ada", "Grace", "Edsger")]
    books = [Book.objects.create(author=a, title="A book by " + a.name) for a in authors]
finished = int(time.time() * 1000)

names = [b.author.name for b in Book.objects.select_related("author").order_by("id")]
fk_refused = False
try:
    with transaction.atomic():
        Book.objects.create(author_id=1, title="orphan")
except IntegrityError:
    fk_refused = True

# the models and their migrations agree: makemigrations --check exits 1
# on a change
try:
    call_command("makemigrations", "--check", "--dry-run", verbosity=0)
    no_drift = True
except SystemExit:
    no_drift = False
inspected = io.StringIO()
call_command("inspectdb", stdout=inspected)
fixtures = os.path.join(os.path.dirname(os.path.abspath(__file__)), "shop", "fixtures")
os.makedirs(fixtures, exist_ok=True)
call_command("dumpdata", "shop.author", output=os.path.join(fixtures, "authors.json"), verbosity=0)

from django.test.utils import get_runner  # noqa: E402

test_failures = get_runner(settings)(verbosity=0, interactive=False).run_tests(["shop"])
from shop.tests import SEEN  # noqa: E402

print(json.dumps({
    "orm": "Django %s (psycopg2 %s, Python %s)"
    % (django.get_version(), psycopg2.__version__.split()[0], sys.version.split()[0]),
    "started_ms": started,
    "finished_ms": finished,
    "authors": [str(a.id) for a in authors],
    "books": [[str(b.id), str(b.author_id)] for b in books],
    "names": names,
    "fk_refused": fk_refused,
    "id_class": type(authors[0].id).__name__,
    "no_drift": no_drift,
    "inspected_tables": sorted(
        line.split("'")[1] for line in inspected.getvalue().splitlines() if "db_table = " in line),
    "test_failures": test_failures,
    "test_run": SEEN,
}))

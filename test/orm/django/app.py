"""test/t/070_orm_django.pl: Django's makemigrations and migrate make the
tables of the app "shop", then the application inserts through Django's ORM
and prints what the test checks (see test/t/FlakeOrm.pm).

DEFAULT_AUTO_FIELD is BigAutoField, as Django's project template sets it
since 3.2: the models' keys are 64-bit (AutoField's are 32-bit, which
flake.serial_default leaves to their sequences)."""
import json
import os
import sys
import time

import django
import psycopg2
from django.conf import settings

settings.configure(
    INSTALLED_APPS=["shop"],
    DATABASES={
        "default": {
            "ENGINE": "django.db.backends.postgresql",
            "HOST": os.environ["PGHOST"],
            "PORT": os.environ["PGPORT"],
            "USER": os.environ["PGUSER"],
            "NAME": os.environ["PGDATABASE"],
        }
    },
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
}))

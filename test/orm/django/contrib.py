"""test/t/077_orm_django_contrib.pl: Django's own contrib apps (auth,
contenttypes, sessions, admin) migrated on a database with
flake.serial_default on.  Their keys are AutoField, 32-bit, whatever
DEFAULT_AUTO_FIELD says (each app's AppConfig sets its own): migrate must
go on, they keep their sequences, and flake_sequence_keys() lists them.
Prints one line of JSON: the Django version, the keys listed, the id of a
user made (from its sequence)."""
import json

import django
from django.conf import settings

from connection import DATABASES

settings.configure(
    INSTALLED_APPS=[
        "django.contrib.contenttypes",
        "django.contrib.auth",
        "django.contrib.sessions",
        "django.contrib.admin",
    ],
    DATABASES=DATABASES,
    DEFAULT_AUTO_FIELD="django.db.models.BigAutoField",
    USE_TZ=True,
    SECRET_KEY="test/t/077",
)
django.setup()

from django.contrib.auth.models import User  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import connection  # noqa: E402

call_command("migrate", verbosity=0)
user = User.objects.create_user("ada")
with connection.cursor() as cursor:
    cursor.execute("SELECT table_name::text, column_name, type::text FROM flake_sequence_keys()")
    keys = ["%s.%s %s" % row for row in cursor.fetchall()]

print(json.dumps({"orm": "Django %s" % django.get_version(), "sequence_keys": keys, "user_id": user.id}))

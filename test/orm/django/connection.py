"""The database the ORM tests give the Django applications (app.py,
contrib.py), from PGHOST, PGPORT, PGUSER and PGDATABASE: Django's
DATABASES setting."""
import os

DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.postgresql",
        "HOST": os.environ["PGHOST"],
        "PORT": os.environ["PGPORT"],
        "USER": os.environ["PGUSER"],
        "NAME": os.environ["PGDATABASE"],
    }
}

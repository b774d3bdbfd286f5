"""The English names of months and weekdays, for the modules that read or write dates
in text (conversation headers, names, answer kinds): fixed here rather than taken from
the locale, since the text they match is English whatever the machine's language."""

from __future__ import annotations

MONTH_NAMES = (
    "January", "February", "March", "April", "May", "June",
    "July", "August", "September", "October", "November", "December",
)  # fmt: skip
WEEKDAY_NAMES = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")

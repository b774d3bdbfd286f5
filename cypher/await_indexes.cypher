// Wait until every index is online (after the schema is created).
// params: none
CALL db.awaitIndexes(300)

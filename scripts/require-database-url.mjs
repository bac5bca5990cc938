// `npm run test:pg` needs a PostgreSQL server where the tests may create and drop databases.
if (!process.env.DATABASE_URL) {
  process.stderr.write(
    "npm run test:pg needs DATABASE_URL=postgres://user@host:port/db (a server where tests may create databases)\n",
  );
  process.exit(2);
}

/**
 * A read from storage that runs one at a time: a call made while it runs does not start a second
 * one beside it, but asks for one more run once this one ends (events may have come meanwhile), as
 * long as `wanted()` still says so. `read` answers false to stop at once, with no further run.
 */
export class SerialRead {
  private again = false;
  running = false;

  constructor(
    private readonly read: () => Promise<boolean>,
    private readonly wanted: () => boolean,
  ) {}

  async run(): Promise<void> {
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = true;
    try {
      do {
        this.again = false;
        if (!(await this.read())) return;
      } while (this.again && this.wanted());
    } finally {
      this.running = false;
    }
  }
}
